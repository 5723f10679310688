//go:build unix

package upstream

import (
	"errors"
	"net"
	"syscall"
)

// connIdle reports whether nothing is waiting to be read on c, neither
// bytes nor the peer's close: it peeks at the socket without waiting and
// without consuming anything. (A read with a deadline in the past would
// not do: the runtime reports the deadline before it tries the socket.)
func connIdle(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	idle := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		idle = n < 0 && (errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK))
		return true // done: never wait for the socket
	})
	return err == nil && idle
}

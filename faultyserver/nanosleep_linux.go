package faultyserver

import (
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// wakeFD is an eventfd that interrupts waitFor early; -1 when it could not
// be created, and waitFor then waits in short slices instead.
var (
	wakeOnce sync.Once
	wakeFD   = -1
)

// waitSlice bounds a wait when there is no eventfd to end it early.
const waitSlice = 200 * time.Microsecond

func wakeInit() {
	wakeOnce.Do(func() {
		if fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err == nil {
			wakeFD = fd
		}
	})
}

// waitFor blocks the calling thread for d, with the kernel's timer
// resolution rather than the Go runtime poller's, or until wake is called.
func waitFor(d time.Duration) {
	wakeInit()
	if wakeFD < 0 {
		ts := unix.NsecToTimespec(int64(min(d, waitSlice)))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	fds := []unix.PollFd{{Fd: int32(wakeFD), Events: unix.POLLIN}}
	n, err := unix.Ppoll(fds, &ts, nil)
	if err == nil && n > 0 {
		var buf [8]byte
		_, _ = unix.Read(wakeFD, buf[:]) // reset the counter
	}
}

// wake ends a waitFor in progress, or the next one, at once.
func wake() {
	wakeInit()
	if wakeFD >= 0 {
		one := [8]byte{1}
		_, _ = unix.Write(wakeFD, one[:])
	}
}

// prSetTimerSlack is PR_SET_TIMERSLACK from linux/prctl.h.
const prSetTimerSlack = 29

// tightenTimerSlack sets the calling thread's timer slack to 1 ns, so the
// kernel does not defer its wake-ups to batch them with others.
func tightenTimerSlack() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
}

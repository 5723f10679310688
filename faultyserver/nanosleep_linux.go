package faultyserver

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// alarm is a timerfd in the Go runtime's network poller: a goroutine
// waiting for it parks like one waiting for a socket, so its thread and
// processor go back to other work, and the poller wakes it when the
// kernel's high-resolution timer expires (timerfd timers carry no timer
// slack). Where no timerfd can be made, wait sleeps its thread in short
// slices instead.
type alarm struct {
	once   sync.Once
	f      *os.File // nil: no timerfd
	fd     int
	broken atomic.Bool // a timerfd_settime failed; wait sleeps in slices
}

// waitSlice bounds a wait that nothing can end early.
const waitSlice = 200 * time.Microsecond

func (a *alarm) init() {
	a.once.Do(func() {
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
		if err != nil {
			return
		}
		a.fd = fd
		a.f = os.NewFile(uintptr(fd), "lbchaos-alarm") // non-blocking: in the poller
	})
}

// set makes the alarm go off d from now, replacing any earlier setting.
// Calls of set are serialized by the caller; wait may run beside them.
func (a *alarm) set(d time.Duration) {
	a.init()
	if a.f == nil || a.broken.Load() {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, 1)))} // 0 would disarm it
	if err := unix.TimerfdSettime(a.fd, 0, &spec, nil); err != nil {
		a.broken.Store(true)
	}
}

// wait parks the caller until the alarm goes off (d is when it was set to,
// for the fallback). A set for a nearer time meanwhile ends it then.
func (a *alarm) wait(d time.Duration) {
	if a.f == nil || a.broken.Load() {
		tightenTimerSlack()
		ts := unix.NsecToTimespec(int64(min(d, waitSlice)))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
		return
	}
	var buf [8]byte
	_, _ = a.f.Read(buf[:]) // the expirations since the last read
}

// prSetTimerSlack is PR_SET_TIMERSLACK from linux/prctl.h.
const prSetTimerSlack = 29

// tightenTimerSlack sets the calling thread's timer slack to 1 ns, so the
// kernel does not defer its wake-ups to batch them with others.
func tightenTimerSlack() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
}

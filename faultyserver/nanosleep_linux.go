package faultyserver

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread for d with the kernel's timer
// resolution, bypassing the Go runtime's millisecond-granular poller.
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// prSetTimerSlack is PR_SET_TIMERSLACK from linux/prctl.h.
const prSetTimerSlack = 29

// tightenTimerSlack sets the calling thread's timer slack to 1 ns, so the
// kernel does not defer its wake-ups to batch them with others.
func tightenTimerSlack() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
}

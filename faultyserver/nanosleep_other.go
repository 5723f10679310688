//go:build !linux

package faultyserver

import "time"

// nanosleep falls back to the runtime's timers where the platform offers
// no nanosleep in package syscall.
func nanosleep(d time.Duration) { time.Sleep(d) }

func tightenTimerSlack() {}

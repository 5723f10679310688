//go:build !linux

package faultyserver

import "time"

// waitSlice bounds a wait, since nothing can end it early here.
const waitSlice = 200 * time.Microsecond

// waitFor falls back to the runtime's timers, in short slices so that a
// nearer deadline added meanwhile is not missed by more than one slice.
func waitFor(d time.Duration) { time.Sleep(min(d, waitSlice)) }

func wake() {}

func tightenTimerSlack() {}

//go:build !linux

package faultyserver

import "time"

// alarm falls back to the runtime's timers, in short slices so that a
// nearer deadline set meanwhile is not missed by more than one slice.
type alarm struct{}

// waitSlice bounds a wait, since nothing can end it early here.
const waitSlice = 200 * time.Microsecond

func (a *alarm) set(time.Duration) {}

func (a *alarm) wait(d time.Duration) { time.Sleep(min(d, waitSlice)) }

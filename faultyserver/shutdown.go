package faultyserver

import (
	"fmt"
	"strings"
	"time"
)

// Shutdown is what an instance served by Serve, ServeListener or
// ServeSidecar does when its context is done (lbchaos serve: on SIGTERM or
// SIGINT). In every mode its health check (HealthPath) answers 503 from
// that moment on.
type Shutdown struct {
	// Mode is ShutdownFinish ("" means it too), ShutdownAbrupt or
	// ShutdownDrain.
	Mode string
	// Delay is how long a drain goes on serving before it finishes; with
	// ShutdownDrain only, 0 to MaxShutdownDelay.
	Delay time.Duration
}

// Shutdown modes.
const (
	// ShutdownFinish stops accepting at once, answers hanging requests
	// 503, lets the rest finish for up to ShutdownGrace, then closes
	// every connection. It is the default.
	ShutdownFinish = "finish"
	// ShutdownAbrupt closes the listener and every connection at once:
	// requests in flight get no answer, as when a process is killed.
	ShutdownAbrupt = "abrupt"
	// ShutdownDrain goes on accepting and serving for Delay, every answer
	// with Connection: close (HTTP/2 connections get a GOAWAY as they go
	// idle), so that clients move away while it still answers; then it
	// finishes as ShutdownFinish does.
	ShutdownDrain = "drain"
)

// ShutdownModes are the valid values of Shutdown.Mode, the default first.
var ShutdownModes = []string{ShutdownFinish, ShutdownAbrupt, ShutdownDrain}

// MaxShutdownDelay bounds Shutdown.Delay.
const MaxShutdownDelay = 10 * time.Minute

// mode is s.Mode with "" read as ShutdownFinish.
func (s Shutdown) mode() string {
	if s.Mode == "" {
		return ShutdownFinish
	}
	return s.Mode
}

// String describes s for logs: "finish", "abrupt", "drain for 5s".
func (s Shutdown) String() string {
	if s.mode() == ShutdownDrain {
		return fmt.Sprintf("%s for %v", ShutdownDrain, s.Delay)
	}
	return s.mode()
}

// Validate reports the first bad field of s, its message starting with
// the field's name: "mode: ..." or "delay: ...".
func (s Shutdown) Validate() error {
	if err := s.checkMode(); err != nil {
		return fmt.Errorf("mode: %w", err)
	}
	if err := s.checkDelay(); err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	return nil
}

func (s Shutdown) checkMode() error {
	switch s.Mode {
	case "", ShutdownFinish, ShutdownAbrupt, ShutdownDrain:
		return nil
	}
	return fmt.Errorf("unknown shutdown mode %q (want one of %s)", s.Mode, strings.Join(ShutdownModes, ", "))
}

func (s Shutdown) checkDelay() error {
	switch {
	case s.Delay != 0 && s.mode() != ShutdownDrain:
		return fmt.Errorf("applies to the %s mode only (%s has no delay), got %v", ShutdownDrain, s.mode(), s.Delay)
	case s.Delay < 0:
		return fmt.Errorf("must be >= 0, got %v", s.Delay)
	case s.Delay > MaxShutdownDelay:
		return fmt.Errorf("must be at most %v, got %v", MaxShutdownDelay, s.Delay)
	}
	return nil
}

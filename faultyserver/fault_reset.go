package faultyserver

import (
	"math/rand/v2"
	"time"
)

// Reset closes each request's connection without any response; where the
// transport allows it the close is abortive, so the client sees a
// connection reset.
//
// JSON: {"mode": "reset"}.
type Reset struct {
	Health
}

func init() { register(Reset{}) }

// Mode returns "reset".
func (Reset) Mode() string { return "reset" }

// Validate checks health_status.
func (f Reset) Validate() error { return f.Health.validate() }

// Plan resets the connection.
func (Reset) Plan(time.Duration, *rand.Rand) Action { return Action{Kind: ActionReset} }

package faultyserver

import (
	"math/rand/v2"
	"time"
)

// Hang accepts requests and never answers them: each ends when its client
// gives up or the server closes. It occupies no worker.
//
// JSON: {"mode": "hang"}.
type Hang struct {
	Health
}

func init() { register(Hang{}) }

// Mode returns "hang".
func (Hang) Mode() string { return "hang" }

// Validate checks health_status.
func (f Hang) Validate() error { return f.Health.validate() }

// Plan hangs the request.
func (Hang) Plan(time.Duration, *rand.Rand) Action { return Action{Kind: ActionHang} }

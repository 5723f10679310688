package faultyserver

import (
	"math/rand/v2"
	"time"
)

// Kill crashes the instance's container (SIGKILL): requests in flight see
// their connections reset, new ones are refused. Clearing the fault starts
// the container again; its published port may change. Approximated as a
// reset without containers.
//
// JSON: {"mode": "kill"}.
type Kill struct {
	ContainerLevel
}

func init() { register(Kill{}) }

// Mode returns "kill".
func (Kill) Mode() string { return "kill" }

// Validate accepts every Kill.
func (Kill) Validate() error { return nil }

// Plan approximates a dead process: the connection fails.
func (Kill) Plan(time.Duration, *rand.Rand) Action { return Action{Kind: ActionReset} }

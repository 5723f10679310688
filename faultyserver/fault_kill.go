package faultyserver

import (
	"context"
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

// Inflict kills the container.
func (Kill) Inflict(ctx context.Context, c Containers, id int) error { return c.Kill(ctx, id) }

// Heal starts it again and waits until it answers its health check.
func (Kill) Heal(ctx context.Context, c Containers, id int) error { return c.Restart(ctx, id) }

// Reachable is false: a dead process answers nothing.
func (Kill) Reachable() bool { return false }

// Relocates is true: a restarted container may publish another port.
func (Kill) Relocates() bool { return true }

package faultyserver

import (
	"context"
	"math/rand/v2"
	"time"
)

// Pause freezes the instance's container (the cgroup freezer): the process
// stops, connections stay open, requests hang until it is unpaused. Clearing
// the fault unpauses it. Approximated as a hang without containers.
//
// JSON: {"mode": "pause"}.
type Pause struct {
	ContainerLevel
}

func init() { register(Pause{}) }

// Mode returns "pause".
func (Pause) Mode() string { return "pause" }

// Validate accepts every Pause.
func (Pause) Validate() error { return nil }

// Plan approximates a frozen process: the request hangs.
func (Pause) Plan(time.Duration, *rand.Rand) Action { return Action{Kind: ActionHang} }

// Inflict pauses the container.
func (Pause) Inflict(ctx context.Context, c Containers, id int) error { return c.Pause(ctx, id) }

// Heal unpauses it.
func (Pause) Heal(ctx context.Context, c Containers, id int) error { return c.Unpause(ctx, id) }

// Reachable is false: a frozen process answers nothing.
func (Pause) Reachable() bool { return false }

// Relocates is false: a thawed process keeps its address.
func (Pause) Relocates() bool { return false }

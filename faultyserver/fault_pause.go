package faultyserver

import (
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

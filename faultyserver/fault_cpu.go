package faultyserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// CPU throttles the instance's container to CPUs processors through the
// container runtime (a real noisy neighbour: the server's own work, not a
// simulated delay, slows down). Clearing the fault lifts the limit.
// Approximated without containers by scaling the service time by 1/CPUs
// when CPUs < 1.
//
// JSON: {"mode": "cpu", "cpus": 0.1}.
type CPU struct {
	CPUs float64 `json:"cpus"`
	ContainerLevel
}

func init() { register(CPU{}) }

// Mode returns "cpu".
func (CPU) Mode() string { return "cpu" }

// Validate checks cpus.
func (f CPU) Validate() error {
	if f.CPUs < 0.01 || f.CPUs > 1024 {
		return fmt.Errorf("cpus: must be within [0.01,1024], got %v", f.CPUs)
	}
	return nil
}

// Plan scales the service time by the inverse of the CPU share.
func (f CPU) Plan(base time.Duration, _ *rand.Rand) Action {
	if f.CPUs < 1 {
		base = time.Duration(float64(base) / f.CPUs)
	}
	return Action{Kind: ActionServe, Service: base}
}

// Inflict limits the container to f.CPUs.
func (f CPU) Inflict(ctx context.Context, c Containers, id int) error {
	return c.SetCPU(ctx, id, f.CPUs)
}

// Heal lifts the limit.
func (CPU) Heal(ctx context.Context, c Containers, id int) error { return c.SetCPU(ctx, id, 0) }

// Reachable is true: a throttled process still answers, slowly.
func (CPU) Reachable() bool { return true }

// Relocates is false: the process keeps running where it is.
func (CPU) Relocates() bool { return false }

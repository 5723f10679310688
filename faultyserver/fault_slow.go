package faultyserver

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Slow makes requests take longer while still occupying a worker. Exactly one
// of Factor and Latency is set.
//
// JSON: {"mode": "slow", "factor": 3} or {"mode": "slow", "latency": "200ms"}.
type Slow struct {
	// Factor multiplies the sampled service time; > 0 when set.
	Factor float64 `json:"factor,omitempty"`
	// Latency replaces the sampled service time; > 0 when set.
	Latency Duration `json:"latency,omitempty"`
	Health
}

func init() { register(Slow{}) }

// Mode returns "slow".
func (Slow) Mode() string { return "slow" }

// Validate checks that exactly one of factor and latency is set and positive.
func (f Slow) Validate() error {
	switch {
	case math.IsNaN(f.Factor) || math.IsInf(f.Factor, 0) || f.Factor < 0:
		return fmt.Errorf("factor: must be a finite number > 0, got %v", f.Factor)
	case f.Latency < 0:
		return fmt.Errorf("latency: must be > 0, got %s", f.Latency)
	case f.Factor != 0 && f.Latency != 0:
		return errors.New("factor, latency: set exactly one, got both")
	case f.Factor == 0 && f.Latency == 0:
		return errors.New("factor, latency: set exactly one (factor > 0 multiplies the service time, latency > 0 replaces it)")
	}
	return f.Health.validate()
}

// Plan serves the request for base*Factor, or for Latency.
func (f Slow) Plan(base time.Duration, _ *rand.Rand) Action {
	if f.Latency != 0 {
		return Action{Kind: ActionServe, Service: time.Duration(f.Latency)}
	}
	return Action{Kind: ActionServe, Service: clampDuration(float64(base) * f.Factor)}
}

// PlanProxy adds Latency before forwarding, or multiplies the upstream's
// time by Factor.
func (f Slow) PlanProxy(*rand.Rand) Action {
	if f.Latency != 0 {
		return Action{Kind: ActionServe, Service: time.Duration(f.Latency)}
	}
	return Action{Kind: ActionServe, Scale: f.Factor}
}

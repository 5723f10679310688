package faultyserver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Jitter multiplies each request's service time by a factor drawn uniformly
// from [MinFactor, MaxFactor], independently per request: an instance that
// still answers, but erratically (a flaky zone, a noisy host).
//
// JSON: {"mode": "jitter", "min_factor": 1, "max_factor": 5}.
type Jitter struct {
	// MinFactor is the smallest multiplier, > 0; default 1.
	MinFactor float64 `json:"min_factor"`
	// MaxFactor is the largest multiplier, >= MinFactor; default 2.
	MaxFactor float64 `json:"max_factor"`
	Health
}

func init() { register(Jitter{MinFactor: 1, MaxFactor: 2}) }

// Mode returns "jitter".
func (Jitter) Mode() string { return "jitter" }

// Validate checks that 0 < min_factor <= max_factor, both finite.
func (f Jitter) Validate() error {
	switch {
	case !(f.MinFactor > 0) || math.IsInf(f.MinFactor, 0):
		return fmt.Errorf("min_factor: must be a finite number > 0, got %v", f.MinFactor)
	case !(f.MaxFactor >= f.MinFactor) || math.IsInf(f.MaxFactor, 0):
		return fmt.Errorf("max_factor: must be a finite number >= min_factor (%v), got %v", f.MinFactor, f.MaxFactor)
	}
	return f.Health.validate()
}

// Plan draws one uniform number from r and serves the request for base
// times the factor it gives.
func (f Jitter) Plan(base time.Duration, r *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: clampDuration(float64(base) * f.factor(r))}
}

// PlanProxy draws the factor as Plan does and multiplies the upstream's
// time by it.
func (f Jitter) PlanProxy(r *rand.Rand) Action {
	return Action{Kind: ActionServe, Scale: f.factor(r)}
}

func (f Jitter) factor(r *rand.Rand) float64 {
	return f.MinFactor + (f.MaxFactor-f.MinFactor)*r.Float64()
}

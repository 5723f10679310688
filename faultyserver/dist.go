package faultyserver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Distribution kinds accepted in [Dist.Kind].
const (
	DistFixed       = "fixed"       // Value
	DistUniform     = "uniform"     // Min, Max
	DistExponential = "exponential" // Mean
	DistNormal      = "normal"      // Mean, SD; truncated at 0
	DistLognormal   = "lognormal"   // Median, Sigma
)

// DistKinds lists the accepted [Dist.Kind] values, sorted.
func DistKinds() []string {
	return []string{DistExponential, DistFixed, DistLognormal, DistNormal, DistUniform}
}

// Dist describes a service-time distribution. Kind selects the family; only
// the parameters of that family may be set (see the Dist* constants).
//
// JSON/YAML: {"dist": "normal", "mean": "167ms", "sd": "5ms"}.
type Dist struct {
	Kind   string   `json:"dist" yaml:"dist"`
	Value  Duration `json:"value,omitempty" yaml:"value,omitempty"`
	Min    Duration `json:"min,omitempty" yaml:"min,omitempty"`
	Max    Duration `json:"max,omitempty" yaml:"max,omitempty"`
	Mean   Duration `json:"mean,omitempty" yaml:"mean,omitempty"`
	SD     Duration `json:"sd,omitempty" yaml:"sd,omitempty"`
	Median Duration `json:"median,omitempty" yaml:"median,omitempty"`
	Sigma  float64  `json:"sigma,omitempty" yaml:"sigma,omitempty"` // of the underlying normal, dimensionless
}

// Fixed returns the distribution that always yields d.
func Fixed(d time.Duration) Dist { return Dist{Kind: DistFixed, Value: Duration(d)} }

// Validate reports the first problem with d; the message starts with the
// offending field's JSON name.
func (d Dist) Validate() error {
	type param struct {
		name string
		set  bool
	}
	var allowed []string
	switch d.Kind {
	case DistFixed:
		allowed = []string{"value"}
		if d.Value < 0 {
			return fmt.Errorf("value: must be >= 0, got %s", d.Value)
		}
	case DistUniform:
		allowed = []string{"min", "max"}
		if d.Min < 0 {
			return fmt.Errorf("min: must be >= 0, got %s", d.Min)
		}
		if d.Max < d.Min {
			return fmt.Errorf("max: must be >= min (%s), got %s", d.Min, d.Max)
		}
	case DistExponential:
		allowed = []string{"mean"}
		if d.Mean <= 0 {
			return fmt.Errorf("mean: must be > 0, got %s", d.Mean)
		}
	case DistNormal:
		allowed = []string{"mean", "sd"}
		if d.Mean < 0 {
			return fmt.Errorf("mean: must be >= 0, got %s", d.Mean)
		}
		if d.SD < 0 {
			return fmt.Errorf("sd: must be >= 0, got %s", d.SD)
		}
	case DistLognormal:
		allowed = []string{"median", "sigma"}
		if d.Median <= 0 {
			return fmt.Errorf("median: must be > 0, got %s", d.Median)
		}
		if d.Sigma < 0 || math.IsNaN(d.Sigma) || math.IsInf(d.Sigma, 0) {
			return fmt.Errorf("sigma: must be a finite number >= 0, got %v", d.Sigma)
		}
	case "":
		return fmt.Errorf("dist: required, one of %s", strings.Join(DistKinds(), ", "))
	default:
		return fmt.Errorf("dist: unknown distribution %q, want one of %s", d.Kind, strings.Join(DistKinds(), ", "))
	}
	for _, p := range []param{
		{"value", d.Value != 0}, {"min", d.Min != 0}, {"max", d.Max != 0},
		{"mean", d.Mean != 0}, {"sd", d.SD != 0}, {"median", d.Median != 0}, {"sigma", d.Sigma != 0},
	} {
		if p.set && !slices.Contains(allowed, p.name) {
			return fmt.Errorf("%s: not a parameter of dist %q (takes %s)", p.name, d.Kind, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// String describes d for humans, e.g. "fixed 10ms" or
// "normal(mean 167ms, sd 5ms)".
func (d Dist) String() string {
	switch d.Kind {
	case DistFixed:
		return "fixed " + d.Value.String()
	case DistUniform:
		return fmt.Sprintf("uniform(min %s, max %s)", d.Min, d.Max)
	case DistExponential:
		return fmt.Sprintf("exponential(mean %s)", d.Mean)
	case DistNormal:
		return fmt.Sprintf("normal(mean %s, sd %s)", d.Mean, d.SD)
	case DistLognormal:
		return fmt.Sprintf("lognormal(median %s, sigma %g)", d.Median, d.Sigma)
	case "":
		return "unset"
	default:
		return fmt.Sprintf("unknown(%q)", d.Kind)
	}
}

// A Sampler draws service times from a [Dist]. It is not safe for concurrent
// use: it shares the *rand.Rand it was built with.
type Sampler struct {
	dist Dist
	// fixed and uniform are dist.Kind resolved once: Sample runs for every
	// request, and comparing the kind's string there cost a simulation
	// more than the fixed draw itself.
	fixed, uniform bool
	draw           func() float64 // nanoseconds
}

// NewSampler returns a Sampler for d drawing from r. It fails when d is
// invalid.
func NewSampler(d Dist, r *rand.Rand) (*Sampler, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	s := &Sampler{dist: d, fixed: d.Kind == DistFixed, uniform: d.Kind == DistUniform}
	switch d.Kind {
	case DistFixed:
		v := float64(d.Value)
		s.draw = func() float64 { return v }
	case DistUniform:
		u := distuv.Uniform{Min: float64(d.Min), Max: float64(d.Max), Src: r}
		s.draw = u.Rand
	case DistExponential:
		e := distuv.Exponential{Rate: 1 / float64(d.Mean), Src: r}
		s.draw = e.Rand
	case DistNormal:
		n := distuv.Normal{Mu: float64(d.Mean), Sigma: float64(d.SD), Src: r}
		// Truncation by rejection: with Mean >= 0 at least half of all
		// draws are accepted.
		s.draw = func() float64 {
			for {
				if v := n.Rand(); v >= 0 {
					return v
				}
			}
		}
	case DistLognormal:
		l := distuv.LogNormal{Mu: math.Log(float64(d.Median)), Sigma: d.Sigma, Src: r}
		s.draw = l.Rand
	}
	return s, nil
}

// Dist returns the distribution s samples.
func (s *Sampler) Dist() Dist { return s.dist }

// Sample draws one service time, rounded to the nanosecond and clamped to
// [0, math.MaxInt64]. A fixed distribution yields its value exactly and a
// uniform one stays within [min, max], though a float64 holds durations
// above 2^53 ns (104 days) only approximately.
func (s *Sampler) Sample() time.Duration {
	switch {
	case s.fixed:
		return time.Duration(s.dist.Value)
	case s.uniform:
		return min(max(clampDuration(s.draw()), time.Duration(s.dist.Min)), time.Duration(s.dist.Max))
	}
	return clampDuration(s.draw())
}

// clampDuration converts nanoseconds to a Duration without overflow.
func clampDuration(ns float64) time.Duration {
	switch {
	case ns <= 0 || math.IsNaN(ns):
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(math.Round(ns))
}

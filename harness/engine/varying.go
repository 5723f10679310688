package engine

import (
	"math"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// RateCurve is a request rate that changes over a run
// (experiments.RateProfile is one).
type RateCurve interface {
	// At returns the rate at t, in requests per second.
	At(t time.Duration) float64
	// Arrivals returns the integral of the rate over [0, t).
	Arrivals(t time.Duration) float64
	// TimeOf is the inverse of Arrivals: the first t with Arrivals(t) >= x;
	// a time later than any run when the rate never reaches x.
	TimeOf(x float64) time.Duration
}

var (
	_ Schedule  = (*EvenSchedule)(nil)
	_ RateCurve = (*experiments.RateProfile)(nil)
)

// EvenSchedule is constant arrival at a rate that changes: the k-th
// request is due when the rate's integral reaches k, so that requests are
// evenly spaced at the rate of the moment. With a constant rate it is
// ConstantSchedule.
type EvenSchedule struct {
	Curve RateCurve
}

// Due implements Schedule.
func (e *EvenSchedule) Due(k uint64) (time.Duration, bool) {
	return e.Curve.TimeOf(float64(k)), true
}

// Count implements Schedule: the number of k with Due(k) < d, exactly.
func (e *EvenSchedule) Count(d time.Duration) uint64 {
	c := uint64(max(math.Ceil(e.Curve.Arrivals(d)), 0))
	for c > 0 && e.Curve.TimeOf(float64(c-1)) >= d {
		c--
	}
	for e.Curve.TimeOf(float64(c)) < d {
		c++
	}
	return c
}

// Pace implements vegeta.Pacer.
func (e *EvenSchedule) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	due, _ := e.Due(hits)
	return max(due-elapsed, 0), false
}

// Rate implements vegeta.Pacer.
func (e *EvenSchedule) Rate(elapsed time.Duration) float64 { return e.Curve.At(elapsed) }

// NewVaryingPoissonSchedule returns a non-homogeneous Poisson process of
// intensity c, by time rescaling: the arrivals s_k of a unit-rate process
// (exponential gaps of mean 1 from the seeded source) are mapped to
// c.TimeOf(s_k), the time the rate's integral reaches s_k. The count of
// arrivals in [a, b) is then Poisson with mean Arrivals(b) - Arrivals(a).
func NewVaryingPoissonSchedule(c RateCurve, seed uint64) *PoissonSchedule {
	p := NewPoissonSchedule(0, seed)
	p.curve = c
	return p
}

// ExperimentSchedule returns the arrival process of exp: its arrival at its
// rate, or, when the rate has stages (exp.Profile), at the rate of the
// moment.
func ExperimentSchedule(exp *experiments.Experiment) Schedule {
	if exp.Profile == nil {
		return NewSchedule(exp.Arrival, exp.Rate, exp.Seed)
	}
	if exp.Arrival == experiments.ArrivalConstant {
		return &EvenSchedule{Curve: exp.Profile}
	}
	return NewVaryingPoissonSchedule(exp.Profile, exp.Seed)
}

package engine

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Schedule is an open-loop arrival process: a vegeta.Pacer whose k-th
// arrival is due at a fixed offset from the start of the attack, whatever
// happened to earlier requests. Due lets the harness measure how late each
// request actually left.
type Schedule interface {
	vegeta.Pacer
	// Due returns when the k-th request (0-based) is scheduled, and false
	// when that is no longer known (far in the past of a streaming schedule).
	Due(k uint64) (time.Duration, bool)
	// Count returns how many arrivals are scheduled strictly before d.
	Count(d time.Duration) uint64
}

var (
	_ Schedule = (*ConstantSchedule)(nil)
	_ Schedule = (*PoissonSchedule)(nil)
)

// ConstantSchedule sends evenly spaced requests: the k-th at k/PerSecond seconds.
type ConstantSchedule struct {
	PerSecond float64 // requests per second, > 0
}

// Due implements Schedule.
func (c *ConstantSchedule) Due(k uint64) (time.Duration, bool) {
	return time.Duration(float64(k) / c.PerSecond * float64(time.Second)), true
}

// Count implements Schedule.
func (c *ConstantSchedule) Count(d time.Duration) uint64 {
	return uint64(math.Ceil(d.Seconds() * c.PerSecond))
}

// Pace implements vegeta.Pacer. It never stops by itself; the attack's
// duration does.
func (c *ConstantSchedule) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	due, _ := c.Due(hits)
	return max(due-elapsed, 0), false
}

// Rate implements vegeta.Pacer.
func (c *ConstantSchedule) Rate(time.Duration) float64 { return c.PerSecond }

// PoissonSchedule sends requests with exponentially distributed gaps of mean
// 1/Rate, drawn from a seeded source: the same seed gives the same arrival
// times. Pace is called from vegeta's single pacing goroutine with
// non-decreasing hits; Due may be called concurrently from result readers.
type PoissonSchedule struct {
	rate float64
	seed uint64
	// curve, when set, makes the process non-homogeneous (see
	// NewVaryingPoissonSchedule); sum is then in unit-rate time.
	curve RateCurve

	mu   sync.Mutex
	rng  *rand.Rand
	next uint64  // index of the next arrival not yet generated
	sum  float64 // arrival next-1, in nanoseconds, kept in float to avoid drift
	// ring holds the most recent arrivals: ring[k%len] is arrival k for
	// next-len(ring) <= k < next. Memory is fixed whatever the run's length;
	// it is allocated at the first Due.
	ring []time.Duration
}

// poissonWindow is how many past arrivals Due can still answer for: results
// come back in completion order, up to the request timeout after they left.
const poissonWindow = 1 << 20

// NewPoissonSchedule returns a Poisson arrival process at rate per second.
func NewPoissonSchedule(rate float64, seed uint64) *PoissonSchedule {
	return &PoissonSchedule{
		rate: rate,
		seed: seed,
		rng:  newPoissonRand(seed),
	}
}

// arrival returns arrival k, generating the schedule up to it. p.mu held.
func (p *PoissonSchedule) arrival(k uint64) (time.Duration, bool) {
	if p.ring == nil {
		p.ring = make([]time.Duration, poissonWindow)
	}
	for p.next <= k {
		p.ring[p.next%uint64(len(p.ring))] = poissonNext(p.rng, p.rate, p.curve, &p.sum)
		p.next++
	}
	if p.next-k > uint64(len(p.ring)) {
		return 0, false
	}
	return p.ring[k%uint64(len(p.ring))], true
}

// poissonNext draws the next arrival after the one at *sum (in nanoseconds,
// or in unit-rate time along curve when curve is set) from rng.
func poissonNext(rng *rand.Rand, rate float64, curve RateCurve, sum *float64) time.Duration {
	if curve != nil {
		*sum += rng.ExpFloat64()
		return curve.TimeOf(*sum)
	}
	// The explicit conversion forbids a fused multiply-add, so the
	// schedule is bit-identical on every architecture.
	*sum += float64(rng.ExpFloat64() / rate * float64(time.Second))
	return time.Duration(*sum)
}

// PoissonCursor reads a PoissonSchedule's arrivals once, in order, from
// the first: the same times as Due, generated afresh from the seed,
// without the lock and the window of past arrivals that Due keeps for
// readers out of order. Not safe for concurrent use.
type PoissonCursor struct {
	rng   *rand.Rand
	rate  float64
	curve RateCurve
	sum   float64
}

// Cursor returns a cursor at p's first arrival; p itself is not touched.
func (p *PoissonSchedule) Cursor() *PoissonCursor {
	return &PoissonCursor{rng: newPoissonRand(p.seed), rate: p.rate, curve: p.curve}
}

// Next returns the next arrival: the first call Due(0), the next Due(1)...
func (c *PoissonCursor) Next() time.Duration {
	return poissonNext(c.rng, c.rate, c.curve, &c.sum)
}

// Due implements Schedule.
func (p *PoissonSchedule) Due(k uint64) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.arrival(k)
}

// Count implements Schedule. It replays the seeded sequence from the start,
// so it neither disturbs nor depends on the attack in progress.
func (p *PoissonSchedule) Count(d time.Duration) uint64 {
	rng := newPoissonRand(p.seed)
	var t float64
	n := uint64(0)
	if p.curve != nil {
		for {
			t += rng.ExpFloat64()
			if p.curve.TimeOf(t) >= d {
				return n
			}
			n++
		}
	}
	for {
		t += float64(rng.ExpFloat64() / p.rate * float64(time.Second))
		if time.Duration(t) >= d {
			return n
		}
		n++
	}
}

// Pace implements vegeta.Pacer.
func (p *PoissonSchedule) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	due, _ := p.Due(hits)
	return max(due-elapsed, 0), false
}

// Rate implements vegeta.Pacer: the mean rate at elapsed.
func (p *PoissonSchedule) Rate(elapsed time.Duration) float64 {
	if p.curve != nil {
		return p.curve.At(elapsed)
	}
	return p.rate
}

func newPoissonRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// NewSchedule returns the arrival process an experiment names.
func NewSchedule(arrival string, rate float64, seed uint64) Schedule {
	if arrival == "constant" {
		return &ConstantSchedule{PerSecond: rate}
	}
	return NewPoissonSchedule(rate, seed)
}

// Stride returns generator gen's share of s among gens generators: its
// j-th arrival is s's arrival j*gens+gen, so that the generators together
// send s's arrivals, each exactly once, at their times. With one generator
// it is s.
func Stride(s Schedule, gen, gens int) Schedule {
	if gens <= 1 {
		return s
	}
	return &strideSchedule{s: s, gen: uint64(gen), gens: uint64(gens)}
}

type strideSchedule struct {
	s         Schedule
	gen, gens uint64
}

// Global returns the index in the whole schedule of the generator's j-th
// arrival.
func (t *strideSchedule) Global(j uint64) uint64 { return j*t.gens + t.gen }

// Due implements Schedule.
func (t *strideSchedule) Due(j uint64) (time.Duration, bool) { return t.s.Due(t.Global(j)) }

// Count implements Schedule.
func (t *strideSchedule) Count(d time.Duration) uint64 {
	c := t.s.Count(d)
	if c <= t.gen {
		return 0
	}
	return (c - t.gen + t.gens - 1) / t.gens
}

// Pace implements vegeta.Pacer.
func (t *strideSchedule) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	due, _ := t.Due(hits)
	return max(due-elapsed, 0), false
}

// Rate implements vegeta.Pacer: the generator's share of the mean rate.
func (t *strideSchedule) Rate(elapsed time.Duration) float64 {
	return t.s.Rate(elapsed) / float64(t.gens)
}

// EndGrace is how long after its duration an attack paced by Until may
// still send the arrivals due before the end that it is late for.
const EndGrace = 100 * time.Millisecond

// Until paces s for an attack of duration d: it sends every arrival due
// before d and stops at the first one due at or after it. Run the attack
// for d + EndGrace: Vegeta's own duration check, made before each arrival
// is paced, would drop an arrival due just before d whenever the one before
// it left a little late, so the count sent would vary by one or two from
// run to run (and between one generator and several).
func Until(s Schedule, d time.Duration) vegeta.Pacer { return until{s, d} }

type until struct {
	s Schedule
	d time.Duration
}

func (u until) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	due, _ := u.s.Due(hits)
	if due >= u.d {
		return 0, true
	}
	return max(due-elapsed, 0), false
}

func (u until) Rate(elapsed time.Duration) float64 { return u.s.Rate(elapsed) }

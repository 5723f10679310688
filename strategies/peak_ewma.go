package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of the peak-ewma strategy: Finagle's and Linkerd's decay time,
// and both options off.
const (
	DefaultPeakEWMADecay          = 10 * time.Second
	DefaultPeakEWMADefaultRTT     = time.Duration(0)
	DefaultPeakEWMAFailurePenalty = time.Duration(0)
)

// peakEWMAPenalty is the load of a host without a measurement that has
// requests pending, before adding their number: Finagle's Long.MaxValue >> 16
// (about 39 hours in nanoseconds), far above any real cost.
const peakEWMAPenalty = float64(math.MaxInt64 >> 16)

func init() {
	registerBase("peak-ewma", []string{"decay", "default_rtt", "failure_penalty"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		decay, err := durationParam(params, "decay", DefaultPeakEWMADecay)
		if err != nil {
			return nil, err
		}
		defaultRTT, err := peakEWMAOptionalDuration(params, "default_rtt", DefaultPeakEWMADefaultRTT)
		if err != nil {
			return nil, err
		}
		penalty, err := peakEWMAOptionalDuration(params, "failure_penalty", DefaultPeakEWMAFailurePenalty)
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return newPeakEWMA(env.n, decay, defaultRTT, penalty, env.clock, env.rand, env.inflight)
		}, nil
	})
}

// peakEWMAOptionalDuration reads a duration >= 0, where 0 (also written "0s")
// turns an option off.
func peakEWMAOptionalDuration(params map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: want a duration >= 0 like \"10ms\" (0 turns it off), got %q", key, v)
	}
	return d, nil
}

// peakEWMA is the "peak-ewma" strategy: Finagle's and Linkerd's peak EWMA
// load with two random choices.
//
// Every host has a cost, an estimate of its round-trip time in nanoseconds
// that is hyper-sensitive to peaks. Each outcome observes rtt =
// Outcome.Latency (a negative latency counts as 0): with w = exp(-Δt/τ), Δt
// the time since the host's cost was last updated (Env clock) and τ =
// decay, the cost jumps to rtt if rtt exceeds it, and otherwise becomes
// cost·w + rtt·(1−w). Before its load is read, the cost is decayed by
// observing 0 at the current time and the decayed value is stored, as in
// Finagle. Observing 0 never takes the peak branch, so decays compose
// exactly (w(a)·w(b) = w(a+b)): reading a load more or less often changes
// nothing but rounding, and no Sweep is needed.
//
// The load is cost·(pending+1), pending being the host's requests in flight
// from this Balancer; a host whose cost is 0 (never measured, or only
// measured at 0) with requests pending gets Finagle's penalty 2^47−1 +
// pending instead, so that a new host is not flooded before its first
// answer. A pick draws two distinct hosts uniformly at random and takes the
// one with the lower load; a tie goes to the first draw, whose order is
// itself random, so ties are broken by a fair coin. With one host it picks
// that host.
//
// Parameters:
//   - decay (default 10s, > 0): τ, the mean lifetime of a peak, as in
//     Finagle and Linkerd.
//   - default_rtt (default 0 = off): the cost every host starts with
//     instead of 0. Envoy's contrib peak EWMA uses 10ms, tower 1s. Like
//     tower, the default decays from the moment the Balancer is built, as a
//     measured cost would; a host starting at default_rtt is not penalised
//     (until its cost underflows to exactly 0, after hundreds of τ idle).
//   - failure_penalty (default 0 = off): a failed outcome (Outcome.Failed:
//     5xx, transport error or timeout) is observed as max(Latency,
//     failure_penalty), so that a host failing fast stops looking fast, the
//     fix Linkerd's proxy adopted later. Off, failures feed their latency as
//     in Finagle, and a host that fails in 1ms attracts traffic: Envoy's
//     documentation warns of exactly that.
//
// Deviations from Finagle:
//   - the round-trip time is the caller's Outcome.Latency (pick to done)
//     rather than the balancer's own timer, and pending is the Balancer's
//     in-flight count, which it decrements before done runs, as Finagle's
//     end() does;
//   - the state of an endpoint is kept by id for the Balancer's lifetime: an
//     endpoint that leaves the host set and comes back keeps its cost,
//     decayed over its absence, where Finagle starts a new node at 0;
//   - time is the Env clock's wall reading (Time.UnixNano, cheaper than
//     Time.Sub on clocks without a monotonic reading) where Finagle reads a
//     monotonic clock: a step of the wall clock forward decays each cost
//     once by the step, and a step back counts, as in Finagle, as Δt = 0
//     for one update per host.
type peakEWMA struct {
	// Immutable after construction.
	tau      float64 // decay in nanoseconds
	penalty  float64 // failure_penalty in nanoseconds; 0 = off
	clock    Clock
	rand     *rand.Rand
	inflight []int64         // indexed by endpoint id; maintained by the Balancer
	dones    []func(Outcome) // per endpoint, so that a pick allocates nothing

	// Mutable; the Balancer's mutex guards it.
	hosts []peakEWMAHost // indexed by endpoint id
}

// peakEWMAHost is the cost of one endpoint and when it was last updated.
type peakEWMAHost struct {
	cost  float64 // nanoseconds
	stamp int64   // Unix time in nanoseconds
}

var _ Picker = (*peakEWMA)(nil)

func newPeakEWMA(n int, decay, defaultRTT, failurePenalty time.Duration, clock Clock, r *rand.Rand, inflight []int64) *peakEWMA {
	if clock == nil {
		clock = SystemClock{}
	}
	p := &peakEWMA{
		tau:      float64(decay),
		penalty:  float64(failurePenalty),
		clock:    clock,
		rand:     r,
		inflight: inflight,
		dones:    make([]func(Outcome), n),
		hosts:    make([]peakEWMAHost, n),
	}
	start := p.now()
	for ep := range p.hosts {
		p.hosts[ep] = peakEWMAHost{cost: float64(defaultRTT), stamp: start}
		p.dones[ep] = func(o Outcome) { p.observe(ep, o) }
	}
	return p
}

// now returns the Env clock's time as Unix time in nanoseconds.
func (p *peakEWMA) now() int64 { return p.clock.Now().UnixNano() }

func (p *peakEWMA) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	n := len(hosts)
	if n == 1 {
		return hosts[0], p.dones[hosts[0]]
	}
	i := p.rand.IntN(n)
	j := p.rand.IntN(n - 1)
	if j >= i {
		j++
	}
	a, b := hosts[i], hosts[j]
	t := p.now()
	if p.load(b, t) < p.load(a, t) {
		return b, p.dones[b]
	}
	return a, p.dones[a]
}

// load decays the cost of ep to time t and returns its load.
func (p *peakEWMA) load(ep int, t int64) float64 {
	p.update(ep, 0, t)
	cost, pending := p.hosts[ep].cost, float64(p.inflight[ep])
	if cost == 0 && pending > 0 {
		return peakEWMAPenalty + pending
	}
	return cost * (pending + 1)
}

// observe feeds the outcome of a request to ep into its cost.
func (p *peakEWMA) observe(ep int, o Outcome) {
	rtt := max(float64(o.Latency), 0)
	if p.penalty > 0 && o.Failed() {
		rtt = max(rtt, p.penalty)
	}
	p.update(ep, rtt, p.now())
}

// update observes rtt (nanoseconds) for ep at time t: the cost jumps to a
// higher rtt and otherwise moves towards it with weight 1 − exp(-Δt/τ).
func (p *peakEWMA) update(ep int, rtt float64, t int64) {
	h := &p.hosts[ep]
	dt := max(t-h.stamp, 0)
	h.stamp = t
	switch {
	case rtt > h.cost:
		h.cost = rtt
	case dt == 0 || h.cost == rtt:
		// w = 1, or cost and rtt agree: the cost stays.
	default:
		h.cost = p.blend(h.cost, rtt, dt)
	}
}

// blend returns cost·w + rtt·(1−w) for w = exp(-dt/τ).
func (p *peakEWMA) blend(cost, rtt float64, dt int64) float64 {
	w := math.Exp(-float64(dt) / p.tau)
	return cost*w + rtt*(1-w)
}

package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Defaults of the ewma strategy and its adaptive smoothing. Smoothing
// factors are kept in twentieths, steps of 0.05, so that stepping down
// lands exactly on the floor.
const (
	DefaultEWMAChoiceCount = 2

	ewmaAlphaScale    = 20
	ewmaAlphaStart    = 2 // α = 0.1
	ewmaAlphaAnomaly  = 6 // α = 0.3
	ewmaAlphaFloor    = 1 // α = 0.05
	ewmaAnomaly       = 0.30
	ewmaCalm          = 0.05
	ewmaCalmToStepOut = 5
)

func init() {
	registerBase("ewma", []string{"choice_count"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		count, err := sampledCountParam(params, "choice_count", DefaultEWMAChoiceCount)
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return newEWMA(env.n, count, env.rand, env.inflight)
		}, nil
	})
}

// sampledCountParam reads a choice count: 0 (scan every host) or at least
// 2, as Envoy's least_request requires.
func sampledCountParam(params map[string]string, key string, def int) (int, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n == 1 {
		return 0, fmt.Errorf("%s: want 0 (scan every host) or an integer >= 2, got %q", key, v)
	}
	return n, nil
}

// ewma is the "ewma" strategy: a per-host exponentially weighted moving
// average of response times whose smoothing factor adapts, the
// response-time EWMA with adaptive smoothing of the survey of thirteen
// load-balancing algorithms, combined with the requests in flight.
//
// Each host has an average ewma, a smoothing factor α and a count of calm
// samples. Every outcome is a sample rtt = Outcome.Latency (nanoseconds). A
// host's first sample sets ewma = rtt and leaves α at its start, 0.1. Every
// later sample is handled in this order:
//  1. deviation = |rtt − ewma| / ewma against the average before the
//     sample (0 when both are 0, +Inf when only ewma is 0);
//  2. deviation > 30% (an anomaly): α jumps to 0.3 at once, whatever it
//     was, and the calm count restarts at 0; the limit of 0.05 per step
//     applies to stepping down only, so that the average reacts to the
//     anomaly itself;
//  3. deviation < 5% (calm): the calm count grows; at 5 consecutive calm
//     samples α steps down by 0.05, never below 0.05, and the count restarts
//     at 0, so each further step takes 5 more calm samples (from 0.3 to the
//     floor takes 25);
//  4. deviation from 5% to 30% inclusive: α stays and the calm count
//     restarts at 0, the streak being broken;
//  5. ewma = α·rtt + (1 − α)·ewma with the α that steps 2-4 left, so the
//     anomalous sample is already weighted 0.3.
//
// The smoothing rule says nothing of how hosts are compared; here a pick
// draws choice_count (default 2) distinct hosts uniformly at random, as
// Envoy's least_request does (it draws with replacement), or takes every
// host when choice_count is 0 or at least their number, and picks the
// lowest ewma·(in flight + 1), in flight being the host's requests in
// flight from this Balancer: the response-time estimate alone would herd
// every request onto one host between samples, and the factor spreads
// them, as peak EWMA's cost·(pending+1) does. Ties are broken
// uniformly at random. A host without a sample counts as ewma 0 and so
// wins until its first outcome arrives, which tries every host early; it
// also means a new host takes every pick it is drawn in until its first
// answer (peak-ewma's penalty avoids that).
//
// Failed outcomes (5xx, transport errors, timeouts) feed their latency like
// any other: a host that fails in 1ms looks like the fastest host and draws
// traffic, the failure mode this harness demonstrates. Pair it with eject,
// or use peak-ewma with failure_penalty.
//
// The average does not decay with time: a host that was slow keeps its
// estimate until it is picked again, which with full scan may be never.
// State is kept by endpoint id for the Balancer's lifetime, so an endpoint
// that leaves the host set and comes back keeps its average and α.
type ewma struct {
	// Immutable after construction.
	inflight []int64         // indexed by endpoint id; maintained by the Balancer
	dones    []func(Outcome) // per endpoint, so that a pick allocates nothing

	// Mutable; the Balancer's mutex guards it.
	hosts  []ewmaHost // indexed by endpoint id
	choose sampledMin
}

// ewmaHost is the response-time average of one endpoint.
type ewmaHost struct {
	ewma     float64 // nanoseconds
	alpha    int32   // α in twentieths
	calm     int32   // consecutive samples with deviation < ewmaCalm
	measured bool    // whether a sample arrived
}

var _ Picker = (*ewma)(nil)

func newEWMA(n, count int, r *rand.Rand, inflight []int64) *ewma {
	e := &ewma{
		inflight: inflight,
		dones:    make([]func(Outcome), n),
		hosts:    make([]ewmaHost, n),
	}
	for ep := range e.hosts {
		e.hosts[ep].alpha = ewmaAlphaStart
		e.dones[ep] = func(o Outcome) { e.observe(ep, o) }
	}
	e.choose = sampledMin{rand: r, count: count, load: e.load}
	return e
}

func (e *ewma) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	ep := e.choose.pick(hosts)
	return ep, e.dones[ep]
}

// load is the ewma of ep times its requests in flight plus one.
func (e *ewma) load(ep int) float64 {
	return e.hosts[ep].ewma * float64(e.inflight[ep]+1)
}

// factor returns the smoothing factor α.
func (h *ewmaHost) factor() float64 { return float64(h.alpha) / ewmaAlphaScale }

// observe feeds the latency of one outcome of ep into its average.
func (e *ewma) observe(ep int, o Outcome) {
	h := &e.hosts[ep]
	rtt := max(float64(o.Latency), 0)
	if !h.measured {
		h.ewma, h.measured = rtt, true
		return
	}
	var dev float64
	switch {
	case h.ewma != 0:
		dev = math.Abs(rtt-h.ewma) / h.ewma
	case rtt != 0:
		dev = math.Inf(1)
	}
	switch {
	case dev > ewmaAnomaly:
		h.alpha, h.calm = ewmaAlphaAnomaly, 0
	case dev < ewmaCalm:
		if h.calm++; h.calm >= ewmaCalmToStepOut {
			h.alpha, h.calm = max(h.alpha-1, ewmaAlphaFloor), 0
		}
	default:
		h.calm = 0
	}
	a := h.factor()
	h.ewma = a*rtt + (1-a)*h.ewma
}

// sampledMin chooses the host of least load among count distinct hosts
// drawn uniformly at random, or among all hosts when count is 0 or at
// least their number. Ties are broken uniformly at random whatever the
// order of hosts:
//   - a full scan counts the hosts sharing the least load and takes the
//     k-th of them for one uniform draw k, as least-inflight does;
//   - two choices draw two distinct indices; a tie goes to the first draw,
//     whose order is itself random;
//   - other counts run a partial Fisher-Yates shuffle over perm, a
//     permutation of the indices of hosts kept from pick to pick (the
//     shuffle gives a uniformly random ordered sample from any starting
//     permutation), and the first least load in that random order wins.
//
// load must not change while a pick runs.
type sampledMin struct {
	rand  *rand.Rand
	count int
	load  func(endpoint int) float64
	perm  []int // a permutation of 0..len(perm)-1; rebuilt when len(hosts) changes
}

func (s *sampledMin) pick(hosts []int) int {
	n := len(hosts)
	switch {
	case n == 1:
		return hosts[0]
	case s.count == 0 || s.count >= n:
		return s.scan(hosts)
	case s.count == 2:
		i := s.rand.IntN(n)
		j := s.rand.IntN(n - 1)
		if j >= i {
			j++
		}
		a, b := hosts[i], hosts[j]
		if s.load(b) < s.load(a) {
			return b
		}
		return a
	}
	if len(s.perm) != n {
		s.perm = make([]int, n)
		for i := range s.perm {
			s.perm[i] = i
		}
	}
	best, least := -1, 0.0
	for i := range s.count {
		j := i + s.rand.IntN(n-i)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
		h := hosts[s.perm[i]]
		if l := s.load(h); best < 0 || l < least {
			best, least = h, l
		}
	}
	return best
}

// scan returns the host of least load among all hosts, ties uniformly at
// random.
func (s *sampledMin) scan(hosts []int) int {
	least := s.load(hosts[0])
	ties := 1
	for _, h := range hosts[1:] {
		switch l := s.load(h); {
		case l < least:
			least, ties = l, 1
		case l == least:
			ties++
		}
	}
	k := 0
	if ties > 1 {
		k = s.rand.IntN(ties)
	}
	for _, h := range hosts {
		if s.load(h) == least {
			if k == 0 {
				return h
			}
			k--
		}
	}
	panic("unreachable: a host of least load was counted but not found")
}

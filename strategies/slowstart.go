package strategies

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults of the slowstart wrapper, those of Envoy's slow start
// (slow_start_window has no default in Envoy; 30s is a common choice).
const (
	DefaultSlowStartWindow     = 30 * time.Second
	DefaultSlowStartAggression = 1.0
	DefaultSlowStartMinWeight  = 0.1
)

func init() {
	registerWrapper("slowstart", []string{"window", "aggression", "min_weight"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		window, err := durationParam(params, "window", DefaultSlowStartWindow)
		if err != nil {
			return nil, err
		}
		aggression, err := floatParam(params, "aggression", DefaultSlowStartAggression, 0, 100)
		if err != nil || aggression == 0 {
			return nil, fmt.Errorf("aggression: want a number in (0, 100], got %q", params["aggression"])
		}
		minWeight, err := fractionParam(params, "min_weight", DefaultSlowStartMinWeight)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newSlowStart(inner, env, window, aggression, minWeight)
		}, nil
	})
}

// slowStart is the "slowstart" wrapper: Envoy's slow start mode around any
// inner Picker. An endpoint that joins the host set gets a traffic factor of
//
//	max(min_weight, (t/window)^(1/aggression))
//
// for t, the time since it joined, below window; afterwards its traffic is
// no longer scaled. The factor is applied through the weighting helper: a
// host with factor f is kept for a pick with probability f and the inner
// Picker chooses among the hosts kept, rather than Envoy's scaling of the
// host's weight inside its EDF scheduler (see weighting).
//
// Parameters: window (default 30s), the length of slow start; aggression
// (default 1.0, in (0, 100]): 1 ramps linearly, larger values ramp faster
// early; min_weight (default 0.1, in (0, 1]), the least factor, Envoy's
// min_weight_percent (default 10%).
//
// Which hosts are new: the hosts given at the wrapper's first Pick are
// established and never in slow start, as Envoy applies slow start only to
// hosts added after the cluster has warmed up. A host joins when it appears
// in the given hosts after that: added by Balancer.SetHosts, or back after
// an absence (removed and re-added, or re-admitted by an ejecting wrapper
// inside which this one runs, as Envoy restarts slow start when a host turns
// healthy again). A host that leaves during its window leaves slow start;
// when it returns it starts over.
//
// Composition: this wrapper must see the host set, not a random sample of
// it. Put it outside the health and weighting-based wrappers
// ("p2c+health+slowstart"); inside them every host dropped for one pick
// would look like a host leaving and re-joining. Inside eject or
// healthcheck ("p2c+slowstart+eject") a re-admitted host starts slow;
// outside them ("p2c+eject+slowstart") only hosts added to the set do.
//
// Deviations from Envoy: t is not rounded up to one second (Envoy divides
// max(t, 1s) by the window), which only matters below min_weight; the factor
// is computed from the Env clock at every Pick rather than when the
// scheduler is rebuilt; Envoy supports slow start only for round robin and
// least request.
type slowStart struct {
	// Immutable after construction.
	inner     Picker
	window    time.Duration
	exponent  float64 // 1/aggression
	minWeight float64
	clock     Clock
	w         *weighting

	// Mutable; the Balancer's mutex guards everything below.
	feed     hostFeed // gives the inner Picker the hosts kept
	started  bool     // the first Pick has been seen
	moved    bool     // the hosts changed since the last Pick
	present  []bool   // by endpoint: in the hosts of the last Pick
	nPresent int      // count of present
	seen     []uint32 // scratch: seen[ep] == gen when ep is in the new hosts
	gen      uint32
	joined   []time.Time // by endpoint: when its slow start began
	warming  []int       // endpoints in slow start, ascending
}

var (
	_ Picker       = (*slowStart)(nil)
	_ HostsUpdater = (*slowStart)(nil)
	_ Sweeper      = (*slowStart)(nil)
)

func newSlowStart(inner Picker, env *buildEnv, window time.Duration, aggression, minWeight float64) *slowStart {
	return &slowStart{
		inner:     inner,
		window:    window,
		exponent:  1 / aggression,
		minWeight: minWeight,
		clock:     env.clock,
		w:         newWeighting(env.n, env.rand),
		feed:      newHostFeed(inner),
		present:   make([]bool, env.n),
		seen:      make([]uint32, env.n),
		joined:    make([]time.Time, env.n),
	}
}

// UpdateHosts takes hosts as the input of the filter; the next Pick notes
// the hosts that joined or left, at its time.
func (s *slowStart) UpdateHosts(hosts []int) {
	s.moved = true
	s.w.setInput(hosts)
}

// Pick notes hosts that joined or left since the last Pick, brings the
// factors of the hosts in slow start up to date and lets the inner Picker
// choose among the hosts kept.
func (s *slowStart) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if s.moved || len(s.warming) > 0 {
		now := s.clock.Now()
		if s.moved {
			s.moved = false
			s.setHosts(hosts, now)
		}
		s.Sweep(now)
	}
	kept, changed := s.w.filter(hosts)
	if changed {
		s.feed.changed()
	}
	s.feed.sync(kept)
	return s.inner.Pick(req, kept)
}

// setHosts compares hosts with the previous host set.
func (s *slowStart) setHosts(hosts []int, now time.Time) {
	s.gen++
	if s.gen == 0 {
		clear(s.seen)
		s.gen = 1
	}
	joins := 0
	for _, h := range hosts {
		s.seen[h] = s.gen
		if s.present[h] {
			continue
		}
		s.present[h] = true
		joins++
		if s.started {
			s.joined[h] = now
			i, _ := slices.BinarySearch(s.warming, h)
			s.warming = slices.Insert(s.warming, i, h)
			s.w.set(h, s.minWeight)
		}
	}
	// Hosts left only if the set did not just grow by the joins.
	if s.nPresent+joins != len(hosts) {
		for ep, p := range s.present {
			if p && s.seen[ep] != s.gen {
				s.present[ep] = false
				s.leave(ep)
			}
		}
	}
	s.nPresent = len(hosts)
	s.started = true
}

// leave ends the slow start of ep, if any.
func (s *slowStart) leave(ep int) {
	if i, ok := slices.BinarySearch(s.warming, ep); ok {
		s.warming = slices.Delete(s.warming, i, i+1)
		s.w.set(ep, 1)
	}
}

// Sweep sets the factor of every host in slow start for time now and ends
// the slow start of those whose window is over.
func (s *slowStart) Sweep(now time.Time) {
	for i := 0; i < len(s.warming); {
		ep := s.warming[i]
		f, done := s.factor(now.Sub(s.joined[ep]))
		if done {
			s.warming = slices.Delete(s.warming, i, i+1)
			s.w.set(ep, 1)
			continue
		}
		s.w.set(ep, f)
		i++
	}
}

// factor returns the traffic factor of a host t into its slow start, and
// whether its slow start is over.
func (s *slowStart) factor(t time.Duration) (f float64, done bool) {
	if t >= s.window {
		return 1, true
	}
	x := max(0, float64(t)/float64(s.window))
	if s.exponent != 1 {
		x = math.Pow(x, s.exponent)
	}
	return max(s.minWeight, x), false
}

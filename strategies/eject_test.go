package strategies

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func init() {
	benchSpecs = append(benchSpecs, "p2c+eject(success_rate=true)", "p2c+eject(failure_percentage=true)")
}

// steer is an inner Picker that picks the endpoint it is told to, or the
// first host when told -1, and remembers the hosts it was given. It checks
// the HostsUpdater contract: every pick is given the hosts of the latest
// UpdateHosts, and UpdateHosts comes only with hosts that differ from those
// of the previous one.
type steer struct {
	t       *testing.T
	target  int
	hosts   []int
	updated []int // a copy of the hosts of the latest UpdateHosts
	updates int   // UpdateHosts calls
}

func (s *steer) UpdateHosts(hosts []int) {
	if s.updates > 0 && slices.Equal(hosts, s.updated) {
		s.t.Errorf("UpdateHosts(%v) with the hosts of the previous call", hosts)
	}
	s.updated = append(s.updated[:0], hosts...)
	s.updates++
}

func (s *steer) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	if s.updates == 0 || !slices.Equal(hosts, s.updated) {
		s.t.Errorf("picking from %v, but the latest UpdateHosts gave %v", hosts, s.updated)
	}
	s.hosts = hosts
	if s.target < 0 {
		return hosts[0], noDone
	}
	if !slices.Contains(hosts, s.target) {
		s.t.Fatalf("endpoint %d is not available; hosts %v", s.target, hosts)
	}
	return s.target, noDone
}

// ejectRig drives an ejector over n endpoints with a fake clock.
type ejectRig struct {
	t      *testing.T
	clock  *fakeClock
	inner  *steer
	e      *ejector
	hosts  []int
	events []Event
	held   []func(Outcome)
}

func newEjectRig(t *testing.T, n int, cfg ejectConfig) *ejectRig {
	r := &ejectRig{t: t, clock: newFakeClock(), inner: &steer{t: t}, hosts: seq(n)}
	r.e = newEjector(r.inner, n, cfg, r.clock, func(e Event) { r.events = append(r.events, e) })
	return r
}

// testEjectConfig is the default configuration with duration 5s and the
// statistical detectors off, with consecutive and max set, then mods applied.
func testEjectConfig(consecutive int, maxShare float64, mods ...func(*ejectConfig)) ejectConfig {
	c := defaultEjectConfig()
	c.consecutive, c.maxShare = consecutive, maxShare
	c.duration = 5 * time.Second
	c.successRate = false
	for _, m := range mods {
		m(&c)
	}
	return c
}

// ejectNever is a consecutive count that is never reached.
const ejectNever = 1 << 30

// send picks ep times times, reporting o for each at once.
func (r *ejectRig) send(ep int, o Outcome, times int) {
	r.t.Helper()
	for range times {
		r.inner.target = ep
		got, done := feedPick(r.e, Request{}, r.hosts)
		if got != ep {
			r.t.Fatalf("picked %d, want %d", got, ep)
		}
		done(o)
	}
}

// traffic sends ok successes and then failed 503s to ep.
func (r *ejectRig) traffic(ep, ok, failed int) {
	r.t.Helper()
	r.send(ep, ok200, ok)
	r.send(ep, fail503, failed)
}

// hold picks ep times times and keeps the requests open.
func (r *ejectRig) hold(ep, times int) {
	for range times {
		r.inner.target = ep
		_, done := feedPick(r.e, Request{}, r.hosts)
		r.held = append(r.held, done)
	}
}

// release reports o for every held request.
func (r *ejectRig) release(o Outcome) {
	for _, done := range r.held {
		done(o)
	}
	r.held = nil
}

// available returns the hosts the inner Picker is given on a pick whose
// outcome is never reported; nil when the pick is NoHost.
func (r *ejectRig) available() []int { return r.availableOf(r.hosts) }

func (r *ejectRig) availableOf(hosts []int) []int {
	r.t.Helper()
	r.inner.target, r.inner.hosts = -1, nil
	ep, done := feedPick(r.e, Request{}, hosts)
	if done == nil {
		r.t.Fatalf("Pick returned a nil done")
	}
	if ep == NoHost {
		if r.inner.hosts != nil {
			r.t.Errorf("NoHost although the inner picker was given %v", r.inner.hosts)
		}
		return nil
	}
	return slices.Clone(r.inner.hosts)
}

func at(d time.Duration) time.Time { return epoch0.Add(d) }

// ejectEv and readmitEv are the events of an ejection and of a re-admission.
func ejectEv(d time.Duration, ep int, reason string) Event {
	return Event{Time: at(d), Endpoint: ep, Kind: EventEject, Detail: reason}
}

func readmitEv(d time.Duration, ep int) Event {
	return Event{Time: at(d), Endpoint: ep, Kind: EventReadmit}
}

const reason5xx = ejectReasonConsecutive

func TestEject(t *testing.T) {
	const dur = 5 * time.Second
	tests := []struct {
		name        string
		n           int
		consecutive int
		max         float64
		script      func(r *ejectRig)
		ejected     []int
		events      []Event
		ejections   int
	}{
		{
			name: "five failures eject", n: 4, consecutive: 5, max: 0.5,
			script:    func(r *ejectRig) { r.send(1, fail503, 5) },
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 1, reason5xx)},
			ejections: 1,
		},
		{
			name: "every kind of failure counts", n: 4, consecutive: 3, max: 0.5,
			script: func(r *ejectRig) {
				r.send(2, refused, 1)
				r.send(2, Outcome{Timeout: true}, 1)
				r.send(2, Outcome{Status: 500}, 1)
			},
			ejected:   []int{2},
			events:    []Event{ejectEv(0, 2, reason5xx)},
			ejections: 1,
		},
		{
			name: "four failures and a success do not eject", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 4)
				r.send(1, ok200, 1)
				r.send(1, fail503, 4)
				r.send(1, Outcome{Status: 404}, 1)
				r.send(1, fail503, 4)
			},
		},
		{
			name: "failures of other endpoints do not add up", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				for range 4 {
					r.send(0, fail503, 1)
					r.send(1, fail503, 1)
				}
			},
		},
		{
			name: "still ejected just before the duration", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 5)
				r.clock.Advance(dur - time.Nanosecond)
				r.send(0, ok200, 1)
				if got := r.available(); !slices.Equal(got, []int{0, 2, 3}) {
					r.t.Errorf("available %v, want [0 2 3]", got)
				}
			},
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 1, reason5xx)},
			ejections: 1,
		},
		{
			name: "re-admitted at the first pick after the duration", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.clock.Advance(time.Second)
				r.send(1, fail503, 5)
				r.clock.Advance(dur + 2*time.Second)
				r.send(1, ok200, 1)
			},
			events:    []Event{ejectEv(time.Second, 1, reason5xx), readmitEv(time.Second+dur+2*time.Second, 1)},
			ejections: 1,
		},
		{
			name: "re-admitted by Sweep", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 5)
				r.e.Sweep(at(dur - 1))
				r.e.Sweep(at(dur))
			},
			events:    []Event{ejectEv(0, 1, reason5xx), readmitEv(dur, 1)},
			ejections: 1,
		},
		{
			name: "each endpoint re-admitted after its own duration", n: 4, consecutive: 1, max: 0.5,
			script: func(r *ejectRig) {
				r.send(0, fail503, 1)
				r.clock.Advance(2 * time.Second)
				r.send(1, fail503, 1)
				r.clock.Advance(dur - 2*time.Second)
				r.send(2, ok200, 1)
			},
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 0, reason5xx), ejectEv(2*time.Second, 1, reason5xx), readmitEv(dur, 0)},
			ejections: 2,
		},
		{
			name: "re-admissions in order of expiry, not of id", n: 6, consecutive: 1, max: 0.5,
			script: func(r *ejectRig) {
				r.send(0, fail503, 1)
				r.clock.Advance(time.Second)
				r.send(2, fail503, 1)
				r.clock.Advance(2 * time.Second)
				r.send(1, fail503, 1)
				r.clock.Advance(2 * time.Second)
				r.send(3, ok200, 1)
				r.clock.Advance(time.Second)
				r.send(3, ok200, 1)
			},
			ejected: []int{1},
			events: []Event{
				ejectEv(0, 0, reason5xx), ejectEv(time.Second, 2, reason5xx), ejectEv(3*time.Second, 1, reason5xx),
				readmitEv(dur, 0), readmitEv(dur+time.Second, 2),
			},
			ejections: 3,
		},
		{
			name: "re-ejected after consecutive more failures, for twice as long", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 5)
				r.clock.Advance(dur)
				r.send(1, fail503, 4)
				if got := r.e.Ejected(nil); len(got) != 0 {
					r.t.Errorf("ejected %v after 4 failures following re-admission", got)
				}
				r.send(1, fail503, 1)
				r.clock.Advance(2*dur - time.Nanosecond)
				r.send(0, ok200, 1)
			},
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 1, reason5xx), readmitEv(dur, 1), ejectEv(dur, 1, reason5xx)},
			ejections: 2,
		},
		{
			name: "cap of one in ten", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 7)
			},
			ejected:   []int{0},
			events:    []Event{ejectEv(0, 0, reason5xx)},
			ejections: 1,
		},
		{
			// As in Envoy the count restarts once it reached the
			// threshold, ejected or not.
			name: "capped endpoint counts again from zero", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 5)
				r.clock.Advance(dur)
				r.send(2, ok200, 1)
				r.send(1, fail503, 4)
				if got := r.e.Ejected(nil); len(got) != 0 {
					r.t.Errorf("ejected %v; the capped endpoint should count from zero", got)
				}
				r.send(1, fail503, 1)
			},
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 0, reason5xx), readmitEv(dur, 0), ejectEv(dur, 1, reason5xx)},
			ejections: 2,
		},
		{
			name: "room freed while the failing request was in flight", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 4)
				r.hold(1, 1)
				r.clock.Advance(dur)
				r.release(fail503)
			},
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 0, reason5xx), readmitEv(dur, 0), ejectEv(dur, 1, reason5xx)},
			ejections: 2,
		},
		{
			name: "capped endpoint with a success starts over", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 4)
				r.send(1, ok200, 1)
				r.clock.Advance(dur)
				r.send(1, fail503, 4)
			},
			events:    []Event{ejectEv(0, 0, reason5xx), readmitEv(dur, 0)},
			ejections: 1,
		},
		{
			name: "max share of endpoints", n: 10, consecutive: 1, max: 0.3,
			script: func(r *ejectRig) {
				for ep := range 10 {
					r.send(ep, fail503, 1)
				}
			},
			ejected:   []int{0, 1, 2},
			events:    []Event{ejectEv(0, 0, reason5xx), ejectEv(0, 1, reason5xx), ejectEv(0, 2, reason5xx)},
			ejections: 3,
		},
		{
			name: "max=1 ejects every endpoint and then there is no host", n: 3, consecutive: 1, max: 1,
			script: func(r *ejectRig) {
				for ep := range 3 {
					r.send(ep, fail503, 1)
				}
			},
			ejected:   []int{0, 1, 2},
			events:    []Event{ejectEv(0, 0, reason5xx), ejectEv(0, 1, reason5xx), ejectEv(0, 2, reason5xx)},
			ejections: 3,
		},
		{
			name: "single endpoint is ejected, no host until re-admitted", n: 1, consecutive: 1, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 1)
				r.clock.Advance(dur - 1)
				if got := r.available(); got != nil {
					r.t.Errorf("available %v while the only endpoint is ejected, want NoHost", got)
				}
				r.clock.Advance(1)
				r.send(0, fail503, 1)
			},
			ejected:   []int{0},
			events:    []Event{ejectEv(0, 0, reason5xx), readmitEv(dur, 0), ejectEv(dur, 0, reason5xx)},
			ejections: 2,
		},
		{
			name: "consecutive=0 never ejects", n: 4, consecutive: 0, max: 0.5,
			script: func(r *ejectRig) { r.send(1, fail503, 100) },
		},
		{
			name: "requests in flight at ejection do not eject again", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.hold(1, 10)
				r.send(1, fail503, 5)
				r.release(fail503)
			},
			ejected:   []int{1},
			events:    []Event{ejectEv(0, 1, reason5xx)},
			ejections: 1,
		},
		{
			name: "requests from before an ejection do not count after re-admission", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.hold(1, 10)
				r.send(1, fail503, 5)
				r.clock.Advance(dur)
				r.send(1, fail503, 4)
				r.release(fail503)
				r.send(1, ok200, 1)
				r.send(1, fail503, 4)
			},
			events:    []Event{ejectEv(0, 1, reason5xx), readmitEv(dur, 1)},
			ejections: 1,
		},
		{
			name: "requests from before re-admission do not count", n: 4, consecutive: 2, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 1)
				r.hold(1, 1)
				r.send(1, fail503, 1) // ejected; the held request is stale
				r.clock.Advance(dur)
				r.send(1, fail503, 1)
				r.release(fail503)
			},
			events:    []Event{ejectEv(0, 1, reason5xx), readmitEv(dur, 1)},
			ejections: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEjectRig(t, tt.n, testEjectConfig(tt.consecutive, tt.max))
			tt.script(r)
			if diff := cmp.Diff(tt.ejected, r.e.Ejected(nil)); diff != "" {
				t.Errorf("ejected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.events, r.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := r.e.Ejections(); got != tt.ejections {
				t.Errorf("Ejections() = %d, want %d", got, tt.ejections)
			}
			want := slices.DeleteFunc(seq(tt.n), func(ep int) bool { return slices.Contains(tt.ejected, ep) })
			if len(want) == 0 {
				want = nil // NoHost
			}
			if got := r.available(); !slices.Equal(got, want) {
				t.Errorf("inner picker given %v, want %v", got, want)
			}
		})
	}
}

// TestEjectTimeGrowth ejects one endpoint again and again and checks its
// multiplier, ejection time and re-admission after each step: 5s, 10s,
// 15s, then capped at max_duration 17s. The multiplier stops growing once
// multiplier·duration >= max_duration + duration, at 5.
func TestEjectTimeGrowth(t *testing.T) {
	r := newEjectRig(t, 4, testEjectConfig(1, 0.5, func(c *ejectConfig) {
		c.maxDuration = 17 * time.Second
		c.interval = time.Hour // no decay during the script
	}))
	steps := []struct {
		mult int64
		time time.Duration
	}{
		{1, 5 * time.Second},
		{2, 10 * time.Second},
		{3, 15 * time.Second},
		{4, 17 * time.Second},
		{5, 17 * time.Second},
		{5, 17 * time.Second},
	}
	var want []Event
	now := time.Duration(0)
	for i, s := range steps {
		r.send(2, fail503, 1)
		want = append(want, ejectEv(now, 2, reason5xx))
		h := r.e.state[2]
		if !h.ejected || h.mult != s.mult || h.until != at(now+s.time) || r.e.Ejections() != i+1 {
			t.Fatalf("ejection %d: ejected %v, multiplier %d, until %v, %d ejections; want multiplier %d, until %v",
				i+1, h.ejected, h.mult, h.until.Sub(epoch0), r.e.Ejections(), s.mult, now+s.time)
		}
		r.clock.Advance(s.time - time.Nanosecond)
		if got := r.available(); slices.Contains(got, 2) {
			t.Fatalf("ejection %d: re-admitted 1ns early", i+1)
		}
		r.clock.Advance(time.Nanosecond)
		now += s.time
		if got := r.available(); !slices.Equal(got, seq(4)) {
			t.Fatalf("ejection %d: not re-admitted at %v: available %v", i+1, now, got)
		}
		want = append(want, readmitEv(now, 2))
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestEjectMultiplierCap(t *testing.T) {
	tests := []struct {
		base, max time.Duration
		want      int64
		times     []time.Duration // ejection times for multipliers 1, 2, ...
	}{
		{30 * time.Second, 300 * time.Second, 11, nil},
		{5 * time.Second, 17 * time.Second, 5, []time.Duration{5e9, 10e9, 15e9, 17e9, 17e9}},
		{5 * time.Second, 15 * time.Second, 4, []time.Duration{5e9, 10e9, 15e9, 15e9}},
		{5 * time.Second, 5 * time.Second, 2, []time.Duration{5e9, 5e9}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%v", tt.base, tt.max), func(t *testing.T) {
			if got := ejectMultiplierCap(tt.base, tt.max); got != tt.want {
				t.Errorf("ejectMultiplierCap = %d, want %d", got, tt.want)
			}
			e := newEjector(&steer{t: t}, 1, testEjectConfig(1, 1, func(c *ejectConfig) {
				c.duration, c.maxDuration = tt.base, tt.max
			}), newFakeClock(), nil)
			for i, want := range tt.times {
				if got := e.ejectionTime(int64(i + 1)); got != want {
					t.Errorf("ejection time for multiplier %d = %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// TestEjectMultiplierDecay follows Envoy: at each interval boundary at
// which an endpoint is not ejected and was re-admitted at least an interval
// earlier, its multiplier goes down by one.
func TestEjectMultiplierDecay(t *testing.T) {
	r := newEjectRig(t, 4, testEjectConfig(1, 0.5, func(c *ejectConfig) { c.interval = 10 * time.Second }))
	const s = time.Second
	steps := []struct {
		name    string
		to      time.Duration // clock time of the step
		fail    bool          // endpoint 1 fails, else endpoint 0 succeeds
		mult    int64
		ejected bool
		until   time.Duration
	}{
		{"first ejection at 0s, for 5s", 0, true, 1, true, 5 * s},
		{"re-admitted at 5s", 5 * s, false, 1, false, 5 * s},
		{"second ejection at 6s, for 10s", 6 * s, true, 2, true, 16 * s},
		{"boundary 10s: ejected, no decay", 10 * s, false, 2, true, 16 * s},
		{"re-admitted at 16s", 16 * s, false, 2, false, 16 * s},
		{"boundary 20s: re-admitted only 4s ago", 20 * s, false, 2, false, 16 * s},
		{"boundary 30s: healthy for an interval", 30 * s, false, 1, false, 16 * s},
		{"boundary 40s: down to zero", 40 * s, false, 0, false, 16 * s},
		{"boundary 50s: stays at zero", 50 * s, false, 0, false, 16 * s},
		{"third ejection at 51s lasts 5s again", 51 * s, true, 1, true, 56 * s},
	}
	now := time.Duration(0)
	for _, st := range steps {
		r.clock.Advance(st.to - now)
		now = st.to
		if st.fail {
			r.send(1, fail503, 1)
		} else {
			r.send(0, ok200, 1)
		}
		h := r.e.state[1]
		if h.mult != st.mult || h.ejected != st.ejected || h.until != at(st.until) {
			t.Fatalf("%s: multiplier %d, ejected %v, until %v; want %d, %v, %v",
				st.name, h.mult, h.ejected, h.until.Sub(epoch0), st.mult, st.ejected, st.until)
		}
	}
}

// TestEjectMultiplierDecayJumps checks that one Sweep across several
// interval boundaries decays as much as a Sweep at each boundary, also when
// the re-admission itself is only noticed late.
func TestEjectMultiplierDecayJumps(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name   string
		sweeps []time.Duration
		want   int64
	}{
		{"before the first boundary a full interval after re-admission", []time.Duration{6 * s, 20*s - 1}, 3},
		{"one jump to that boundary", []time.Duration{6 * s, 20 * s}, 2},
		{"one jump across two qualifying boundaries", []time.Duration{6 * s, 30 * s}, 1},
		{"a sweep at every boundary", []time.Duration{6 * s, 10 * s, 20 * s, 30 * s}, 1},
		{"jumps between boundaries", []time.Duration{6 * s, 15 * s, 25 * s, 39 * s}, 1},
		{"one jump far ahead", []time.Duration{6 * s, 1000 * s}, 0},
		{"re-admission noticed only at 30s", []time.Duration{30 * s}, 1},
		{"re-admission noticed only at 19s", []time.Duration{19 * s}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Duration 1s, interval 10s: ejected at 0s, 1s and 3s, the
			// multiplier reaches 3 and the last ejection ends at 6s;
			// boundaries at 10s, 20s, ... and only those from 16s on count.
			r := newEjectRig(t, 4, testEjectConfig(1, 0.5, func(c *ejectConfig) {
				c.duration, c.interval = time.Second, 10*s
			}))
			r.send(1, fail503, 1)
			r.clock.Advance(s)
			r.send(1, fail503, 1)
			r.clock.Advance(2 * s)
			r.send(1, fail503, 1)
			if h := r.e.state[1]; h.mult != 3 || !h.ejected || h.until != at(6*s) {
				t.Fatalf("setup: multiplier %d, ejected %v until %v", h.mult, h.ejected, h.until.Sub(epoch0))
			}
			for _, d := range tt.sweeps {
				r.e.Sweep(at(d))
			}
			if h := r.e.state[1]; h.mult != tt.want || h.ejected || h.readmitted != at(6*s) {
				t.Errorf("multiplier %d, ejected %v, re-admitted as of %v; want %d, false, 6s",
					h.mult, h.ejected, h.readmitted.Sub(epoch0), tt.want)
			}
			last := tt.sweeps[len(tt.sweeps)-1]
			if want := at((last/(10*s) + 1) * 10 * s); r.e.nextTick != want {
				t.Errorf("next boundary %v, want %v", r.e.nextTick.Sub(epoch0), want.Sub(epoch0))
			}
		})
	}
}

func TestEjectSplitLocal(t *testing.T) {
	timeout := Outcome{Timeout: true}
	tests := []struct {
		name    string
		split   bool
		local   int       // consecutive_local; 0 means 2
		script  []Outcome // to endpoint 1
		ejected []int
		events  []Event
	}{
		{
			name:    "without split local-origin failures count as 5xx",
			script:  []Outcome{refused, timeout, fail503},
			ejected: []int{1}, events: []Event{ejectEv(0, 1, reason5xx)},
		},
		{
			name: "with split a 5xx run is not broken by local-origin failures", split: true,
			script:  []Outcome{fail503, refused, fail503, timeout, fail503},
			ejected: []int{1}, events: []Event{ejectEv(0, 1, reason5xx)},
		},
		{
			name: "with split local-origin failures eject on their own", split: true,
			script:  []Outcome{refused, timeout},
			ejected: []int{1}, events: []Event{ejectEv(0, 1, ejectReasonConsecutiveLocal)},
		},
		{
			name: "with split a response resets the local-origin count", split: true,
			script: []Outcome{refused, fail503, refused, ok200, timeout, Outcome{Status: 404}, refused},
		},
		{
			name: "with split a 5xx run is reset by a success", split: true,
			script: []Outcome{fail503, fail503, ok200, fail503, fail503},
		},
		{
			name: "with split consecutive_local=0 never ejects", split: true, local: -1,
			script: []Outcome{refused, refused, refused, timeout, timeout, refused},
		},
		{
			name: "with split local-origin failures do not add to the 5xx count", split: true,
			script: []Outcome{fail503, refused, fail503},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEjectRig(t, 4, testEjectConfig(3, 0.5, func(c *ejectConfig) {
				c.splitLocal, c.consecutiveLocal = tt.split, 2
				if tt.local < 0 {
					c.consecutiveLocal = 0
				}
			}))
			for _, o := range tt.script {
				r.send(1, o, 1)
			}
			if diff := cmp.Diff(tt.ejected, r.e.Ejected(nil)); diff != "" {
				t.Errorf("ejected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.events, r.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSuccessRateThreshold(t *testing.T) {
	ones := func(n int, more ...float64) []float64 {
		return append(slices.Repeat([]float64{1}, n), more...)
	}
	tests := []struct {
		name            string
		rates           []float64
		mean, threshold float64
	}{
		// mean 0.97; squared deviations 9·0.03² + 0.27² = 0.081, variance
		// 0.0081, stdev 0.09; threshold 0.97 − 1.9·0.09 = 0.799.
		{"ten hosts, one at 70%", ones(9, 0.7), 0.97, 0.799},
		// Envoy's example {50, 100, 100, 100, 100}: mean 90, stdev 20,
		// threshold 52.
		{"Envoy's example", ones(4, 0.5), 0.9, 0.52},
		// mean 0.97; 8·0.03² + 0.07² + 0.17² = 0.041, stdev √0.0041.
		{"two outliers", ones(8, 0.9, 0.8), 0.97, 0.97 - 1.9*0.06403124237432849},
		{"equal rates", []float64{0.9, 0.9, 0.9, 0.9, 0.9}, 0.9, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, threshold := successRateThreshold(tt.rates, 1.9)
			if diff := mean - tt.mean; diff > 1e-12 || diff < -1e-12 {
				t.Errorf("mean %v, want %v", mean, tt.mean)
			}
			if diff := threshold - tt.threshold; diff > 1e-12 || diff < -1e-12 {
				t.Errorf("threshold %v, want %v", threshold, tt.threshold)
			}
		})
	}
}

// TestEjectSuccessRate sends traffic during the first interval (0s to 10s)
// and checks what the success-rate detector ejects at the boundary.
func TestEjectSuccessRate(t *testing.T) {
	const iv = 10 * time.Second
	const sr = ejectReasonSuccessRate
	tests := []struct {
		name    string
		n       int
		max     float64
		split   bool
		traffic func(r *ejectRig)
		ejected []int
		events  []Event
	}{
		{
			name: "one host at 70% among ten", n: 10, max: 0.1,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					if ep == 4 {
						r.traffic(ep, 70, 30)
					} else {
						r.traffic(ep, 100, 0)
					}
				}
			},
			ejected: []int{4}, events: []Event{ejectEv(iv, 4, sr)},
		},
		{
			// Threshold 0.848: 80% is out, 90% stays.
			name: "80% ejected, 90% kept", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					switch ep {
					case 2:
						r.traffic(ep, 90, 10)
					case 7:
						r.traffic(ep, 80, 20)
					default:
						r.traffic(ep, 100, 0)
					}
				}
			},
			ejected: []int{7}, events: []Event{ejectEv(iv, 7, sr)},
		},
		{
			name: "equal rates eject nobody", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					r.traffic(ep, 90, 10)
				}
			},
		},
		{
			name: "a host below the volume is not judged", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					if ep == 4 {
						r.traffic(ep, 69, 30)
					} else {
						r.traffic(ep, 100, 0)
					}
				}
			},
		},
		{
			name: "four hosts with volume are too few", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					switch {
					case ep == 0:
						r.traffic(ep, 10, 90)
					case ep < 4:
						r.traffic(ep, 100, 0)
					default:
						r.traffic(ep, 99, 0)
					}
				}
			},
		},
		{
			name: "five hosts with volume are enough", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					switch {
					case ep == 0:
						r.traffic(ep, 10, 90)
					case ep < 5:
						r.traffic(ep, 100, 0)
					default:
						r.traffic(ep, 99, 0)
					}
				}
			},
			ejected: []int{0}, events: []Event{ejectEv(iv, 0, sr)},
		},
		{
			// 49% and 51% are both below the threshold 51.99%; the cap
			// of one keeps the worst out, not the lowest id.
			name: "under the cap the worst goes first", n: 10, max: 0.1,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					switch ep {
					case 2:
						r.traffic(ep, 51, 49)
					case 5:
						r.traffic(ep, 49, 51)
					default:
						r.traffic(ep, 100, 0)
					}
				}
			},
			ejected: []int{5}, events: []Event{ejectEv(iv, 5, sr)},
		},
		{
			name: "both outliers with room", n: 10, max: 0.2,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					switch ep {
					case 2:
						r.traffic(ep, 51, 49)
					case 5:
						r.traffic(ep, 49, 51)
					default:
						r.traffic(ep, 100, 0)
					}
				}
			},
			ejected: []int{2, 5}, events: []Event{ejectEv(iv, 5, sr), ejectEv(iv, 2, sr)},
		},
		{
			name: "counts start over each interval", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					if ep == 4 {
						r.traffic(ep, 35, 15)
					} else {
						r.traffic(ep, 100, 0)
					}
				}
				r.clock.Advance(iv)
				for ep := range 10 {
					if ep == 4 {
						r.traffic(ep, 35, 15)
					} else {
						r.traffic(ep, 100, 0)
					}
				}
			},
			// At 20s: host 4 had 50 outcomes in each interval.
		},
		{
			name: "an outcome at the boundary counts in the next interval", n: 10, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					if ep == 4 {
						r.traffic(ep, 70, 29)
					} else {
						r.traffic(ep, 100, 0)
					}
				}
				r.hold(4, 1)
				r.clock.Advance(iv)
				r.release(fail503) // runs the boundary first: 99 outcomes
			},
		},
		{
			name: "with split the local-origin success rate is judged apart", n: 10, max: 0.1, split: true,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					r.traffic(ep, 100, 0)
				}
				r.send(6, refused, 30) // 130 local-origin outcomes, 100 responses
			},
			ejected: []int{6}, events: []Event{ejectEv(iv, 6, ejectReasonSuccessRateLocal)},
		},
		{
			name: "without split local-origin failures lower the success rate", n: 10, max: 0.1,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					r.traffic(ep, 100, 0)
				}
				r.send(6, refused, 30)
			},
			ejected: []int{6}, events: []Event{ejectEv(iv, 6, sr)},
		},
		{
			name: "with split 5xx lower the external success rate only", n: 10, max: 0.1, split: true,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					if ep == 3 {
						r.traffic(ep, 70, 30)
					} else {
						r.traffic(ep, 100, 0)
					}
				}
			},
			ejected: []int{3}, events: []Event{ejectEv(iv, 3, sr)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEjectRig(t, tt.n, testEjectConfig(ejectNever, tt.max, func(c *ejectConfig) {
				c.successRate, c.splitLocal, c.consecutiveLocal = true, tt.split, ejectNever
			}))
			tt.traffic(r)
			if len(r.events) != 0 {
				t.Fatalf("events before the boundary: %v", r.events)
			}
			r.clock.Advance(r.e.nextTick.Sub(r.clock.Now()))
			r.available() // runs the boundary
			if diff := cmp.Diff(tt.ejected, r.e.Ejected(nil)); diff != "" {
				t.Errorf("ejected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.events, r.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, ep := range tt.ejected {
				if h := r.e.state[ep]; h.until != r.clock.Now().Add(5*time.Second) {
					t.Errorf("endpoint %d ejected until %v, want 5s after %v", ep, h.until.Sub(epoch0), r.clock.Now().Sub(epoch0))
				}
			}
		})
	}
}

// TestEjectSuccessRateWorstFirstInEveryPlacement puts the worst and the
// second-worst outlier on every pair of endpoints: with a cap of one, the
// worst goes, whatever the ids.
func TestEjectSuccessRateWorstFirstInEveryPlacement(t *testing.T) {
	const n = 10
	for worst := range n {
		for second := range n {
			if worst == second {
				continue
			}
			r := newEjectRig(t, n, testEjectConfig(ejectNever, 0.1, func(c *ejectConfig) { c.successRate = true }))
			for ep := range n {
				switch ep {
				case worst:
					r.traffic(ep, 49, 51)
				case second:
					r.traffic(ep, 51, 49)
				default:
					r.traffic(ep, 100, 0)
				}
			}
			r.clock.Advance(10 * time.Second)
			r.available()
			if got := r.e.Ejected(nil); !slices.Equal(got, []int{worst}) {
				t.Errorf("worst %d, second %d: ejected %v", worst, second, got)
			}
		}
	}
}

func TestEjectFailurePercentage(t *testing.T) {
	const iv = 10 * time.Second
	const fp = ejectReasonFailurePct
	tests := []struct {
		name    string
		n       int
		max     float64
		split   bool
		traffic func(r *ejectRig)
		ejected []int
		events  []Event
	}{
		{
			name: "85% failures ejected, 84% kept", n: 6, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 4 {
					r.traffic(ep, 100, 0)
				}
				r.traffic(4, 15, 85)
				r.traffic(5, 16, 84)
			},
			ejected: []int{4}, events: []Event{ejectEv(iv, 4, fp)},
		},
		{
			name: "volume of 50 is enough", n: 6, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 4 {
					r.traffic(ep, 50, 0)
				}
				r.traffic(4, 0, 50)
				r.traffic(5, 0, 49)
			},
			ejected: []int{4}, events: []Event{ejectEv(iv, 4, fp)},
		},
		{
			name: "four hosts with volume are too few", n: 6, max: 0.5,
			traffic: func(r *ejectRig) {
				for ep := range 3 {
					r.traffic(ep, 50, 0)
				}
				r.traffic(3, 0, 50)
				r.traffic(4, 49, 0)
				r.traffic(5, 0, 49)
			},
		},
		{
			name: "every host failing: the cap picks by rate, then id", n: 10, max: 0.3,
			traffic: func(r *ejectRig) {
				for ep := range 10 {
					r.traffic(ep, 0, 100)
				}
				r.traffic(0, 10, 0) // 0 fails 100 of 110: the least bad
			},
			ejected: []int{1, 2, 3}, events: []Event{ejectEv(iv, 1, fp), ejectEv(iv, 2, fp), ejectEv(iv, 3, fp)},
		},
		{
			name: "with split local-origin failures judged apart", n: 6, max: 0.5, split: true,
			traffic: func(r *ejectRig) {
				for ep := range 6 {
					r.traffic(ep, 50, 0)
				}
				r.send(5, refused, 300) // 300 of 350 local-origin outcomes fail: 85.7%
			},
			ejected: []int{5}, events: []Event{ejectEv(iv, 5, ejectReasonFailurePctLocal)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEjectRig(t, tt.n, testEjectConfig(ejectNever, tt.max, func(c *ejectConfig) {
				c.failurePct, c.splitLocal, c.consecutiveLocal = true, tt.split, ejectNever
			}))
			tt.traffic(r)
			r.clock.Advance(iv)
			r.available()
			if diff := cmp.Diff(tt.ejected, r.e.Ejected(nil)); diff != "" {
				t.Errorf("ejected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.events, r.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEjectSweepInterval checks the interval grid: it starts at the first
// Pick, boundaries are judged at the first Pick, done or Sweep at or after
// them, and a jump over several boundaries keeps the grid.
func TestEjectSweepInterval(t *testing.T) {
	const s = time.Second
	r := newEjectRig(t, 5, testEjectConfig(ejectNever, 0.2, func(c *ejectConfig) {
		c.successRate, c.srVolume = true, 10
	}))
	r.e.Sweep(at(100 * s))
	if !r.e.nextTick.IsZero() {
		t.Fatalf("Sweep before any Pick started the intervals: next boundary %v", r.e.nextTick.Sub(epoch0))
	}
	r.clock.Advance(3 * s)
	bad := func() {
		for ep := range 5 {
			if ep == 1 {
				r.traffic(ep, 0, 10)
			} else {
				r.traffic(ep, 10, 0)
			}
		}
	}
	bad()
	if want := at(13 * s); r.e.nextTick != want {
		t.Fatalf("first boundary %v, want 13s", r.e.nextTick.Sub(epoch0))
	}
	r.e.Sweep(at(13*s - 1))
	if len(r.events) != 0 {
		t.Fatalf("ejected before the boundary: %v", r.events)
	}
	r.e.Sweep(at(13 * s))
	if diff := cmp.Diff([]Event{ejectEv(13*s, 1, ejectReasonSuccessRate)}, r.events); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if r.e.nextTick != at(23*s) {
		t.Errorf("next boundary %v, want 23s", r.e.nextTick.Sub(epoch0))
	}
	// Re-admitted at 18s (exact, not at a boundary).
	r.e.Sweep(at(18 * s))
	if got := r.e.Ejected(nil); len(got) != 0 {
		t.Errorf("still ejected at 18s: %v", got)
	}
	// Traffic during [23s, 33s) is judged by a Sweep far later, once; the
	// grid stays on 3s + k·10s.
	r.clock.Advance(25 * s) // 28s
	bad()
	r.e.Sweep(at(47 * s))
	if got := r.e.nextTick; got != at(53*s) {
		t.Errorf("after a jump to 47s the next boundary is %v, want 53s", got.Sub(epoch0))
	}
	want := []Event{
		ejectEv(13*s, 1, ejectReasonSuccessRate), readmitEv(18*s, 1),
		ejectEv(47*s, 1, ejectReasonSuccessRate), // the second ejection: 10s
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if h := r.e.state[1]; h.until != at(57*s) || h.mult != 2 {
		t.Errorf("second ejection until %v with multiplier %d, want 57s and 2", h.until.Sub(epoch0), h.mult)
	}
}

// TestEjectSuccessRateStatistical runs 50 seeded trials of ten hosts with
// 200 requests each in one interval: nine fail 1% of requests, one 20%.
// The bad host's rate (about 0.80) is far below the threshold (about 0.86)
// in all but rare trials, while a good host would need 28 failures of 200
// at 1% to fall below it.
func TestEjectSuccessRateStatistical(t *testing.T) {
	const trials = 50
	caught := 0
	for seed := range uint64(trials) {
		rnd := newRand(seed + 1)
		r := newEjectRig(t, 10, testEjectConfig(ejectNever, 0.1, func(c *ejectConfig) { c.successRate = true }))
		for range 200 {
			for ep := range 10 {
				p := 0.01
				if ep == 3 {
					p = 0.2
				}
				o := ok200
				if rnd.Float64() < p {
					o = fail503
				}
				r.send(ep, o, 1)
			}
		}
		r.clock.Advance(10 * time.Second)
		r.available()
		switch got := r.e.Ejected(nil); {
		case slices.Equal(got, []int{3}):
			caught++
		case len(got) > 0:
			t.Errorf("seed %d: ejected %v, a good host", seed+1, got)
		}
	}
	if caught < trials-3 {
		t.Errorf("the bad host was ejected in %d of %d trials, want at least %d", caught, trials, trials-3)
	}
}

func TestEjectPanic(t *testing.T) {
	tests := []struct {
		name  string
		panic float64
		eject []int
		hosts []int
		want  []int
	}{
		{"off: three of four ejected", 0, []int{0, 1, 2}, nil, []int{3}},
		{"0.5: half left is not below", 0.5, []int{0, 2}, nil, []int{1, 3}},
		{"0.5: a quarter left", 0.5, []int{0, 1, 2}, nil, []int{0, 1, 2, 3}},
		{"0.3: a quarter left", 0.3, []int{0, 1, 2}, nil, []int{0, 1, 2, 3}},
		{"0.25: a quarter left is not below", 0.25, []int{0, 1, 2}, nil, []int{3}},
		{"0.5 over the given hosts", 0.5, []int{0, 1}, []int{0, 1, 2}, []int{0, 1, 2}},
		{"0.5 over the given hosts, half left", 0.5, []int{0}, []int{0, 3}, []int{3}},
		{"off: every given host ejected is no host", 0, []int{0, 1}, []int{0, 1}, nil},
		{"off: every host ejected is no host", 0, []int{0, 1, 2, 3}, nil, nil},
		{"0.1: every host ejected", 0.1, []int{0, 1, 2, 3}, nil, []int{0, 1, 2, 3}},
		{"off: nothing ejected", 0, nil, nil, []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEjectRig(t, 4, testEjectConfig(1, 1, func(c *ejectConfig) { c.panicShare = tt.panic }))
			for _, ep := range tt.eject {
				r.send(ep, fail503, 1)
			}
			hosts := tt.hosts
			if hosts == nil {
				hosts = r.hosts
			}
			if got := r.availableOf(hosts); !slices.Equal(got, tt.want) {
				t.Errorf("inner picker given %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEjectPanicThroughBalancer makes every host fail. With panic=0.5 the
// hosts keep being ejected until all are, and p2c then spreads traffic
// over all ten (chi-square against uniform); without panic and max=0.5,
// half are ejected and traffic goes to the other half only; without panic
// and max=1, all are ejected and every pick is NoHost.
func TestEjectPanicThroughBalancer(t *testing.T) {
	const n, picks = 10, 20000
	const chi2Critical9 = 27.88 // 9 degrees of freedom, p = 0.001
	tests := []struct {
		name    string
		spec    string
		ejected int
	}{
		{"panic", "p2c+eject(consecutive=1,duration=1h,max=1,panic=0.5)", n},
		{"no panic, cap of half", "p2c+eject(consecutive=1,duration=1h,max=0.5)", n / 2},
		{"no panic, no cap: no host", "p2c+eject(consecutive=1,duration=1h,max=1)", n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.spec, Env{N: n, Rand: newRand(7), Clock: newFakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			noHost := 0
			for range 1000 {
				ep, done := b.Pick(Request{})
				if ep == NoHost {
					noHost++
				}
				done(fail503)
			}
			ejected := b.Ejected()
			if len(ejected) != tt.ejected {
				t.Fatalf("ejected %v, want %d hosts", ejected, tt.ejected)
			}
			counts := make([]int, n)
			for range picks {
				ep, done := b.Pick(Request{})
				if ep == NoHost {
					noHost++
				} else {
					counts[ep]++
				}
				done(Outcome{Err: errors.New("no healthy upstream")})
			}
			if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
				t.Errorf("InFlight() = %v, want zeros", got)
			}
			if tt.name == "no panic, no cap: no host" {
				// Ten failures eject all ten; every later pick has no host.
				if noHost != 1000-n+picks {
					t.Errorf("%d NoHost picks, want %d", noHost, 1000-n+picks)
				}
				return
			}
			if noHost != 0 {
				t.Errorf("%d NoHost picks, want none", noHost)
			}
			if tt.ejected == n {
				var chi2 float64
				for _, c := range counts {
					d := float64(c) - picks/n
					chi2 += d * d / (picks / n)
				}
				if chi2 > chi2Critical9 {
					t.Errorf("picks %v: chi-square %.1f against uniform, critical %.2f", counts, chi2, chi2Critical9)
				}
				return
			}
			for ep, c := range counts {
				if slices.Contains(ejected, ep) != (c == 0) {
					t.Errorf("endpoint %d (ejected %v) picked %d times", ep, slices.Contains(ejected, ep), c)
				}
			}
		})
	}
}

func TestEjectionLimit(t *testing.T) {
	tests := []struct {
		n     int
		share float64
		want  int
	}{
		{1, 1, 1},
		{1, 0.1, 1},
		{2, 0.1, 1},
		{2, 1, 2},
		{10, 0.1, 1},
		{10, 0.25, 2},
		{10, 0.5, 5},
		{10, 1, 10},
		{100, 0.1, 10},
		{5, 0.01, 1},
		{100, 0.29, 29},
		{10, 0.7, 7},
	}
	for _, tt := range tests {
		if got := ejectionLimit(tt.n, tt.share); got != tt.want {
			t.Errorf("ejectionLimit(%d, %v) = %d, want %d", tt.n, tt.share, got, tt.want)
		}
	}
}

func TestEjectUpdatesInnerHosts(t *testing.T) {
	// The inner Picker hears of the hosts it is given exactly when they
	// change: at an ejection, at a re-admission, at a change of the input,
	// and not for an ejection undone before the next pick.
	r := newEjectRig(t, 6, testEjectConfig(1, 0.5, func(c *ejectConfig) { c.duration = time.Second }))
	steps := []struct {
		name    string
		do      func()
		hosts   []int // input; nil: r.hosts
		want    []int
		updates int // UpdateHosts calls so far
	}{
		{"first pick", func() {}, nil, seq(6), 1},
		{"nothing changed", func() {}, nil, seq(6), 1},
		{"2 ejected", func() { r.send(2, fail503, 1) }, nil, []int{0, 1, 3, 4, 5}, 2},
		{"nothing changed again", func() { r.send(3, ok200, 1) }, nil, []int{0, 1, 3, 4, 5}, 2},
		{"4 ejected", func() { r.send(4, fail503, 1) }, nil, []int{0, 1, 3, 5}, 3},
		{"another input", func() {}, []int{1, 2, 5}, []int{1, 5}, 4},
		{"2 and 4 re-admitted", func() { r.clock.Advance(2 * time.Second) }, nil, seq(6), 5},
		{"ejected and re-admitted between picks", func() {
			r.inner.target = 3
			_, done := feedPick(r.e, Request{}, r.hosts) // the last pick before
			r.clock.Advance(3 * time.Second)
			done(fail503)
			r.clock.Advance(time.Second)
			r.e.Sweep(r.clock.Now())
		}, nil, seq(6), 5},
	}
	for _, st := range steps {
		st.do()
		hosts := st.hosts
		if hosts == nil {
			hosts = r.hosts
		}
		if got := r.availableOf(hosts); !slices.Equal(got, st.want) || r.inner.updates != st.updates {
			t.Errorf("%s: inner picker given %v after %d updates; want %v after %d", st.name, got, r.inner.updates, st.want, st.updates)
		}
	}
	if got := r.e.Ejections(); got != 3 {
		t.Errorf("%d ejections, want 3", got)
	}
}

// TestEjectFiltersEverySubset gives every non-empty set of hosts, one after
// the other, with endpoints 1 and 3 ejected.
func TestEjectFiltersEverySubset(t *testing.T) {
	r := newEjectRig(t, 5, testEjectConfig(1, 1))
	r.send(1, fail503, 1)
	r.send(3, fail503, 1)
	for mask := 1; mask < 1<<5; mask++ {
		var hosts, want []int
		for ep := range 5 {
			if mask&(1<<ep) != 0 {
				hosts = append(hosts, ep)
				if ep != 1 && ep != 3 {
					want = append(want, ep)
				}
			}
		}
		// want is nil (NoHost) when every given host is ejected.
		if got := r.availableOf(slices.Clone(hosts)); !slices.Equal(got, want) {
			t.Errorf("hosts %v: inner picker given %v, want %v", hosts, got, want)
		}
	}
}

// TestEjectRecycledDones checks that a done reused for a later pick
// reports for that pick's endpoint and epoch.
func TestEjectRecycledDones(t *testing.T) {
	r := newEjectRig(t, 4, testEjectConfig(2, 0.5))
	pick := func(ep int) func(Outcome) {
		r.inner.target = ep
		_, done := feedPick(r.e, Request{}, r.hosts)
		return done
	}
	a := pick(1)
	b := pick(2)
	a(fail503) // recycled
	c := pick(3)
	b(ok200)
	c(fail503)
	d := pick(1)
	d(fail503) // the second failure of 1 in a row ejects it
	e := pick(3)
	e(ok200)
	fails := []int{r.e.state[0].fails, r.e.state[1].fails, r.e.state[2].fails, r.e.state[3].fails}
	if got := r.e.Ejected(nil); !slices.Equal(got, []int{1}) || !slices.Equal(fails, []int{0, 0, 0, 0}) {
		t.Errorf("ejected %v, failure counts %v; want [1] and zeros", got, fails)
	}
	n := 0
	for f := r.e.free; f != nil; f = f.next {
		n++
	}
	if n != 2 {
		t.Errorf("%d dones in the free list, want 2 (two picks were open at most)", n)
	}
}

// noHostPicker is an inner Picker that allows no host and counts the calls
// of its done.
type noHostPicker struct{ dones int }

func (p *noHostPicker) Pick(Request, []int) (int, func(Outcome)) {
	return NoHost, func(Outcome) { p.dones++ }
}

func TestEjectPassesInnerNoHost(t *testing.T) {
	inner := &noHostPicker{}
	e := newEjector(inner, 3, testEjectConfig(1, 1), newFakeClock(), nil)
	for range 3 {
		ep, done := feedPick(e, Request{}, seq(3))
		if ep != NoHost {
			t.Fatalf("picked %d, want NoHost", ep)
		}
		done(Outcome{Err: errors.New("no healthy upstream")})
	}
	if inner.dones != 3 || e.Ejections() != 0 {
		t.Errorf("inner done called %d times (want 3), %d ejections (want 0)", inner.dones, e.Ejections())
	}
}

func TestEjectWithRoundRobinThroughBalancer(t *testing.T) {
	clock := newFakeClock()
	var events []Event
	b, err := New("round-robin+eject(consecutive=2, duration=5s, max=0.5)", Env{
		N: 4, Rand: newRand(1), Clock: clock,
		Events: func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Endpoint 1 fails; every other succeeds.
	var picks []int
	for range 14 {
		ep, done := b.Pick(Request{})
		picks = append(picks, ep)
		if ep == 1 {
			done(fail503)
		} else {
			done(ok200)
		}
		if len(picks) == 10 {
			clock.Advance(5 * time.Second)
		}
	}
	want := []int{
		0, 1, 2, 3, 0, 1, // the second failure of 1 ejects it
		2, 3, 0, 2, // the clock moves 5s after these
		3, 0, 1, 2, // 1 is re-admitted in its turn
	}
	if !slices.Equal(picks, want) {
		t.Errorf("picks %v, want %v", picks, want)
	}
	if diff := cmp.Diff([]Event{ejectEv(0, 1, reason5xx), readmitEv(5*time.Second, 1)}, events); diff != "" || b.Ejections() != 1 {
		t.Errorf("Ejections() = %d, events (-want +got):\n%s", b.Ejections(), diff)
	}
}

// TestEjectSuccessRateThroughBalancer runs the default eject over p2c with
// ten endpoints, one failing 25% of its requests, and Balancer.Sweep at the
// boundary.
func TestEjectSuccessRateThroughBalancer(t *testing.T) {
	clock := newFakeClock()
	var events []Event
	b, err := New("p2c+eject", Env{
		N: 10, Rand: newRand(5), Clock: clock,
		Events: func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every fourth request to 8 fails: 25%, never two in a row.
	to8 := 0
	for range 3000 {
		ep, done := b.Pick(Request{})
		if ep == 8 {
			to8++
		}
		if ep == 8 && to8%4 == 0 {
			done(fail503)
		} else {
			done(ok200)
		}
	}
	if b.Ejections() != 0 {
		t.Fatalf("ejections before the first boundary: %v", events)
	}
	b.Sweep(at(DefaultEjectInterval))
	if diff := cmp.Diff([]Event{ejectEv(DefaultEjectInterval, 8, ejectReasonSuccessRate)}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := b.Ejected(); !slices.Equal(got, []int{8}) {
		t.Errorf("Ejected() = %v, want [8]", got)
	}
	b.Sweep(at(DefaultEjectInterval + DefaultEjectDuration))
	if got := b.Ejected(); got != nil {
		t.Errorf("Ejected() = %v after the ejection time, want none", got)
	}
}

func TestEjectPickAllocations(t *testing.T) {
	for _, spec := range []string{"p2c+eject", "p2c+eject(failure_percentage=true,split_local=true)", "round-robin+eject(success_rate=false)"} {
		t.Run(spec, func(t *testing.T) {
			clock := newFakeClock()
			b, err := New(spec, Env{N: 100, Rand: newRand(1), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			for b.Ejections() == 0 {
				_, done := b.Pick(Request{})
				done(fail503)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				_, done := b.Pick(Request{})
				done(ok200)
			})
			// The Balancer's pending call and its done; the wrapper recycles
			// its dones.
			if allocs > 2 {
				t.Errorf("Pick+done: %v allocations, want at most 2", allocs)
			}
		})
	}
}

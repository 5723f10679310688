package strategies

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// steer is an inner Picker that picks the endpoint it is told to, or the
// first host when told -1, and remembers the hosts it was given.
type steer struct {
	t      *testing.T
	target int
	hosts  []int
}

func (s *steer) Pick(_ Request, hosts []int) (int, func(Outcome)) {
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

func newEjectRig(t *testing.T, n, consecutive int, duration time.Duration, maxShare float64) *ejectRig {
	r := &ejectRig{t: t, clock: newFakeClock(), inner: &steer{t: t}, hosts: seq(n)}
	r.e = newEjector(r.inner, n, consecutive, duration, maxShare, r.clock, func(e Event) { r.events = append(r.events, e) })
	return r
}

// send picks ep times times, reporting o for each at once.
func (r *ejectRig) send(ep int, o Outcome, times int) {
	for range times {
		r.inner.target = ep
		got, done := r.e.Pick(Request{}, r.hosts)
		if got != ep {
			r.t.Fatalf("picked %d, want %d", got, ep)
		}
		done(o)
	}
}

// hold picks ep times times and keeps the requests open.
func (r *ejectRig) hold(ep, times int) {
	for range times {
		r.inner.target = ep
		_, done := r.e.Pick(Request{}, r.hosts)
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
// outcome is never reported.
func (r *ejectRig) available() []int {
	r.inner.target = -1
	r.e.Pick(Request{}, r.hosts)
	return slices.Clone(r.inner.hosts)
}

func at(d time.Duration) time.Time { return epoch0.Add(d) }

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
			events:    []Event{{at(0), 1, EventEject, ""}},
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
			events:    []Event{{at(0), 2, EventEject, ""}},
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
			events:    []Event{{at(0), 1, EventEject, ""}},
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
			events: []Event{
				{at(time.Second), 1, EventEject, ""},
				{at(time.Second + dur + 2*time.Second), 1, EventReadmit, ""},
			},
			ejections: 1,
		},
		{
			name: "re-admitted by Sweep", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 5)
				r.e.Sweep(at(dur - 1))
				r.e.Sweep(at(dur))
			},
			events:    []Event{{at(0), 1, EventEject, ""}, {at(dur), 1, EventReadmit, ""}},
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
			ejected: []int{1},
			events: []Event{
				{at(0), 0, EventEject, ""},
				{at(2 * time.Second), 1, EventEject, ""},
				{at(dur), 0, EventReadmit, ""},
			},
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
				{at(0), 0, EventEject, ""},
				{at(time.Second), 2, EventEject, ""},
				{at(3 * time.Second), 1, EventEject, ""},
				{at(dur), 0, EventReadmit, ""},
				{at(dur + time.Second), 2, EventReadmit, ""},
			},
			ejections: 3,
		},
		{
			name: "re-ejected after consecutive more failures", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.send(1, fail503, 5)
				r.clock.Advance(dur)
				r.send(1, fail503, 4)
				if got := r.e.Ejected(nil); len(got) != 0 {
					r.t.Errorf("ejected %v after 4 failures following re-admission", got)
				}
				r.send(1, fail503, 1)
			},
			ejected: []int{1},
			events: []Event{
				{at(0), 1, EventEject, ""},
				{at(dur), 1, EventReadmit, ""},
				{at(dur), 1, EventEject, ""},
			},
			ejections: 2,
		},
		{
			name: "cap of one in ten", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 7)
			},
			ejected:   []int{0},
			events:    []Event{{at(0), 0, EventEject, ""}},
			ejections: 1,
		},
		{
			name: "capped endpoint ejected at its next failure once room frees", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 5)
				r.clock.Advance(dur)
				r.send(2, ok200, 1)
				r.send(1, fail503, 1)
			},
			ejected: []int{1},
			events: []Event{
				{at(0), 0, EventEject, ""},
				{at(dur), 0, EventReadmit, ""},
				{at(dur), 1, EventEject, ""},
			},
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
			ejected: []int{1},
			events: []Event{
				{at(0), 0, EventEject, ""},
				{at(dur), 0, EventReadmit, ""},
				{at(dur), 1, EventEject, ""},
			},
			ejections: 2,
		},
		{
			name: "capped endpoint with a success starts over", n: 10, consecutive: 5, max: 0.1,
			script: func(r *ejectRig) {
				r.send(0, fail503, 5)
				r.send(1, fail503, 5)
				r.send(1, ok200, 1)
				r.clock.Advance(dur)
				r.send(1, fail503, 4)
			},
			events:    []Event{{at(0), 0, EventEject, ""}, {at(dur), 0, EventReadmit, ""}},
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
			events:    []Event{{at(0), 0, EventEject, ""}, {at(0), 1, EventEject, ""}, {at(0), 2, EventEject, ""}},
			ejections: 3,
		},
		{
			name: "never all endpoints", n: 3, consecutive: 1, max: 1,
			script: func(r *ejectRig) {
				for ep := range 3 {
					r.send(ep, fail503, 1)
				}
				r.send(2, fail503, 5)
			},
			ejected:   []int{0, 1},
			events:    []Event{{at(0), 0, EventEject, ""}, {at(0), 1, EventEject, ""}},
			ejections: 2,
		},
		{
			name: "single endpoint is never ejected", n: 1, consecutive: 1, max: 1,
			script: func(r *ejectRig) { r.send(0, fail503, 10) },
		},
		{
			name: "requests in flight at ejection do not eject again", n: 4, consecutive: 5, max: 0.5,
			script: func(r *ejectRig) {
				r.hold(1, 10)
				r.send(1, fail503, 5)
				r.release(fail503)
			},
			ejected:   []int{1},
			events:    []Event{{at(0), 1, EventEject, ""}},
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
			events:    []Event{{at(0), 1, EventEject, ""}, {at(dur), 1, EventReadmit, ""}},
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
			events:    []Event{{at(0), 1, EventEject, ""}, {at(dur), 1, EventReadmit, ""}},
			ejections: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEjectRig(t, tt.n, tt.consecutive, dur, tt.max)
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
			if got := r.available(); !slices.Equal(got, want) {
				t.Errorf("inner picker given %v, want %v", got, want)
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
		{1, 1, 0},
		{1, 0.1, 0},
		{2, 0.1, 1},
		{2, 1, 1},
		{10, 0.1, 1},
		{10, 0.25, 2},
		{10, 0.5, 5},
		{10, 1, 9},
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

func TestEjectCachesFilteredHosts(t *testing.T) {
	r := newEjectRig(t, 6, 1, time.Second, 0.5)
	r.send(2, fail503, 1)
	r.send(0, ok200, 1)
	first := r.inner.hosts
	r.send(3, ok200, 1)
	if &first[0] != &r.inner.hosts[0] {
		t.Errorf("filtered hosts rebuilt although nothing changed")
	}
	r.send(4, fail503, 1)
	r.send(0, ok200, 1)
	if got := r.inner.hosts; !slices.Equal(got, []int{0, 1, 3, 5}) {
		t.Errorf("after a second ejection the inner picker got %v, want [0 1 3 5]", got)
	}
	if !slices.Equal(first, []int{0, 1, 3, 4, 5}) {
		t.Errorf("a slice handed to the inner picker was rewritten: %v", first)
	}
	other := []int{1, 2, 5}
	r.inner.target = 5
	r.e.Pick(Request{}, other)
	if got := r.inner.hosts; !slices.Equal(got, []int{1, 5}) {
		t.Errorf("for input %v the inner picker got %v, want [1 5]", other, got)
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
	if b.Ejections() != 1 || len(events) != 2 {
		t.Errorf("Ejections() = %d, events %v; want one ejection and one re-admission", b.Ejections(), events)
	}
}

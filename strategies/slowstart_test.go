package strategies

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// inSlowStart returns the hosts in slow start and their current factors.
func (s *slowStart) inSlowStart() map[int]float64 {
	m := make(map[int]float64, len(s.warming))
	for _, ep := range s.warming {
		m[ep] = s.w.get(ep)
	}
	return m
}

func newTestSlowStart(t *testing.T, n int, clock Clock, window time.Duration, aggression, minWeight float64) (*slowStart, *steer) {
	inner := &steer{t: t, target: -1}
	env := &buildEnv{n: n, clock: clock, rand: newRand(1), events: func(Event) {}}
	return newSlowStart(inner, env, window, aggression, minWeight), inner
}

var slowStartApprox = cmpopts.EquateApprox(0, 1e-9)

func TestSlowStartFactor(t *testing.T) {
	const window = 40 * time.Second
	tests := []struct {
		name       string
		aggression float64
		minWeight  float64
		want       []float64 // at 0, 25%, 50%, 75% of the window; 1 = out of slow start
	}{
		{"linear", 1, 0.1, []float64{0.1, 0.25, 0.5, 0.75, 1}},
		{"aggression 2", 2, 0.1, []float64{0.1, 0.5, math.Sqrt(0.5), math.Sqrt(0.75), 1}},
		{"aggression 0.5", 0.5, 0.1, []float64{0.1, 0.1, 0.25, 0.5625, 1}},
		{"min weight 0.3", 1, 0.3, []float64{0.3, 0.3, 0.5, 0.75, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			s, _ := newTestSlowStart(t, 4, clock, window, tt.aggression, tt.minWeight)
			feedPick(s, Request{}, []int{0, 1, 2})
			feedPick(s, Request{}, []int{0, 1, 2, 3}) // 3 joins
			for i, want := range tt.want {
				if i > 0 {
					clock.Advance(window / 4)
					feedPick(s, Request{}, []int{0, 1, 2, 3})
				}
				got := s.w.get(3)
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("at %d%% of the window: factor %v, want %v", 25*i, got, want)
				}
				if inWindow := slices.Contains(s.warming, 3); inWindow != (want < 1) {
					t.Errorf("at %d%% of the window: in slow start %v, want %v", 25*i, inWindow, want < 1)
				}
			}
		})
	}
}

func TestSlowStartJoins(t *testing.T) {
	const window = 10 * time.Second
	type step struct {
		at    time.Duration
		hosts []int // nil: Sweep(at) instead of a Pick
		want  map[int]float64
	}
	steps := []step{
		{0, []int{0, 1, 2}, map[int]float64{}}, // established
		{1 * time.Second, []int{0, 1, 2, 3}, map[int]float64{3: 0.1}},
		{3 * time.Second, []int{0, 1, 2, 3}, map[int]float64{3: 0.2}},
		{4 * time.Second, []int{0, 1, 3}, map[int]float64{3: 0.3}},                     // 2 leaves
		{5 * time.Second, []int{0, 1, 2, 3}, map[int]float64{2: 0.1, 3: 0.4}},          // 2 is back: joins
		{6 * time.Second, []int{0, 2, 3}, map[int]float64{2: 0.1, 3: 0.5}},             // 1 leaves
		{7 * time.Second, []int{0, 1, 2, 3}, map[int]float64{1: 0.1, 2: 0.2, 3: 0.6}},  // 1 is back
		{8 * time.Second, []int{0, 1, 2}, map[int]float64{1: 0.1, 2: 0.3}},             // 3 leaves in its window
		{9 * time.Second, []int{0, 1, 2, 3}, map[int]float64{1: 0.2, 2: 0.4, 3: 0.1}},  // 3 starts over
		{11 * time.Second, []int{0, 1, 2, 3}, map[int]float64{1: 0.4, 2: 0.6, 3: 0.2}}, //
		{15 * time.Second, []int{3, 2, 1, 0}, map[int]float64{1: 0.8, 3: 0.6}},         // 2's window is over
		{17 * time.Second, nil, map[int]float64{3: 0.8}},                               // Sweep ends 1's
		{17 * time.Second, []int{0, 1, 2, 3}, map[int]float64{3: 0.8}},                 // same set again
		{19 * time.Second, []int{0, 1, 2, 3, 4, 5}, map[int]float64{4: 0.1, 5: 0.1}},   // 3's window is over
		{20 * time.Second, []int{0, 5}, map[int]float64{5: 0.1}},
	}
	for order, perm := range map[string]func([]int) []int{
		"ascending":  slices.Clone[[]int],
		"descending": func(h []int) []int { h = slices.Clone(h); slices.Reverse(h); return h },
		"shuffled": func(h []int) []int {
			h = slices.Clone(h)
			newRand(uint64(len(h))).Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
			return h
		},
	} {
		t.Run(order, func(t *testing.T) {
			clock := newFakeClock()
			s, inner := newTestSlowStart(t, 6, clock, window, 1, 0.1)
			for i, st := range steps {
				clock.Advance(at(st.at).Sub(clock.Now()))
				if st.hosts == nil {
					s.Sweep(clock.Now())
				} else {
					hosts := perm(st.hosts)
					feedPick(s, Request{}, hosts)
					for _, h := range inner.hosts {
						if !slices.Contains(hosts, h) {
							t.Fatalf("step %d: inner picker given %v for hosts %v", i, inner.hosts, hosts)
						}
					}
				}
				if diff := cmp.Diff(st.want, s.inSlowStart(), slowStartApprox); diff != "" {
					t.Fatalf("step %d at %v: hosts in slow start (-want +got):\n%s", i, st.at, diff)
				}
			}
		})
	}
}

// TestSlowStartShareRises measures the share of a joined host through the
// Balancer with p2c inside: every request ends at once, so p2c always ties
// and is uniform among the hosts kept, and the joined host's share among 5
// is exactly factor/5.
func TestSlowStartShareRises(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		clock := newFakeClock()
		b, err := New("p2c+slowstart(window=10s)", Env{N: 5, Rand: newRand(seed), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetHosts([]int{0, 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		_, done := b.Pick(Request{})
		done(ok200)
		if err := b.SetHosts([]int{0, 1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
		const picks = 20_000
		prev := -1
		for _, f := range []float64{0.1, 0.25, 0.5, 0.75, 1} {
			if f > 0.1 {
				clock.Advance(2500 * time.Millisecond)
			}
			n := 0
			for range picks {
				ep, done := b.Pick(Request{})
				done(ok200)
				if ep == 4 {
					n++
				}
			}
			p := f / 5
			sd := math.Sqrt(picks * p * (1 - p))
			if math.Abs(float64(n)-picks*p) > 5*sd {
				t.Errorf("seed %d, factor %v: joined host got %d of %d picks, want about %.0f", seed, f, n, picks, picks*p)
			}
			if n <= prev {
				t.Errorf("seed %d, factor %v: joined host got %d picks, no more than the %d before", seed, f, n, prev)
			}
			prev = n
		}
	}
}

func TestSlowStartAfterReadmission(t *testing.T) {
	// Inside eject, slowstart sees an ejected host leave and, once it is
	// re-admitted, join again.
	clock := newFakeClock()
	b, err := New("round-robin+slowstart(window=10s)+eject(consecutive=1,duration=5s,max=0.5)", Env{N: 4, Rand: newRand(1), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var s *slowStart
	for _, sw := range b.sweepers {
		if ss, ok := sw.(*slowStart); ok {
			s = ss
		}
	}
	if s == nil {
		t.Fatal("no slowstart layer among the Balancer's sweepers")
	}
	for range 4 {
		ep, done := b.Pick(Request{})
		if ep == 1 {
			done(fail503)
		} else {
			done(ok200)
		}
	}
	if got := b.Ejected(); !slices.Equal(got, []int{1}) {
		t.Fatalf("Ejected() = %v, want [1]", got)
	}
	_, done := b.Pick(Request{})
	done(ok200)
	if diff := cmp.Diff(map[int]float64{}, s.inSlowStart()); diff != "" {
		t.Errorf("while 1 is ejected, hosts in slow start (-want +got):\n%s", diff)
	}
	for i := 0; len(b.Ejected()) > 0; i++ {
		if i == 600 {
			t.Fatal("endpoint 1 not re-admitted after 600s")
		}
		clock.Advance(time.Second)
		_, done := b.Pick(Request{})
		done(ok200)
	}
	_, done = b.Pick(Request{})
	done(ok200)
	if diff := cmp.Diff(map[int]float64{1: 0.1}, s.inSlowStart(), slowStartApprox); diff != "" {
		t.Errorf("right after re-admission, hosts in slow start (-want +got):\n%s", diff)
	}
	clock.Advance(5 * time.Second)
	_, done = b.Pick(Request{})
	done(ok200)
	if diff := cmp.Diff(map[int]float64{1: 0.5}, s.inSlowStart(), slowStartApprox); diff != "" {
		t.Errorf("5s after re-admission, hosts in slow start (-want +got):\n%s", diff)
	}
}

func TestSlowStartParams(t *testing.T) {
	tests := []struct {
		spec string
		want string // error; empty: valid
	}{
		{"p2c+slowstart", ""},
		{"p2c+slowstart(window=1m,aggression=2.5,min_weight=0.05)", ""},
		{"p2c+slowstart(aggression=0)", `slowstart: aggression: want a number in (0, 100], got "0"`},
		{"p2c+slowstart(aggression=-1)", `slowstart: aggression: want a number in (0, 100], got "-1"`},
		{"p2c+slowstart(aggression=fast)", `slowstart: aggression: want a number in (0, 100], got "fast"`},
		{"p2c+slowstart(min_weight=0)", `slowstart: min_weight: want a number in (0, 1], got "0"`},
		{"p2c+slowstart(min_weight=1.5)", `slowstart: min_weight: want a number in (0, 1], got "1.5"`},
		{"p2c+slowstart(window=0s)", `slowstart: window: want a duration > 0, got "0s"`},
		{"p2c+slowstart(window=30)", `slowstart: window: want a duration like "5s", got "30"`},
		{"p2c+slowstart(ramp=1s)", `slowstart: unknown parameter "ramp" (allowed: window, aggression, min_weight)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			checkParse(t, tt.spec, tt.want)
		})
	}
}

// TestSlowStartProperties changes the host set at random and checks that
// only hosts present are in slow start, with factors in [min_weight, 1),
// and that the inner Picker only ever gets given hosts.
func TestSlowStartProperties(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		script := newRand(seed * 31)
		clock := newFakeClock()
		const n = 8
		b, err := New("random+slowstart(window=3s,aggression=1.5,min_weight=0.2)", Env{N: n, Rand: newRand(seed), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		s := b.picker.(*slowStart)
		hosts := seq(n)
		for step := range 3000 {
			switch r := script.IntN(100); {
			case r < 5:
				hosts = nil
				for ep := range n {
					if script.IntN(3) > 0 {
						hosts = append(hosts, ep)
					}
				}
				if len(hosts) == 0 {
					hosts = []int{script.IntN(n)}
				}
				if err := b.SetHosts(hosts); err != nil {
					t.Fatal(err)
				}
			case r < 10:
				clock.Advance(time.Duration(script.Int64N(int64(time.Second))))
			case r < 12:
				b.Sweep(clock.Now())
			default:
				ep, done := b.Pick(Request{})
				done(ok200)
				if !slices.Contains(hosts, ep) {
					t.Fatalf("seed %d step %d: picked %d, not in %v", seed, step, ep, hosts)
				}
			}
			for ep, f := range s.inSlowStart() {
				if !s.present[ep] || f < 0.2 || f >= 1 {
					t.Fatalf("seed %d step %d: host %d in slow start with factor %v, present %v", seed, step, ep, f, s.present[ep])
				}
			}
		}
	}
}

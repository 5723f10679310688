package strategies

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a Clock that moves only when told; safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var epoch0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{now: epoch0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// testFeeds holds the hostFeed of each Picker that a test gives hosts to
// directly, in place of the Balancer or wrapper that would hold it.
var testFeeds = struct {
	sync.Mutex
	m map[Picker]*hostFeed
}{m: map[Picker]*hostFeed{}}

// feedPick picks with p as a Balancer or wrapper does: p hears of hosts that
// differ from those of its previous pick through UpdateHosts first, so a
// test may give any hosts to any pick.
func feedPick(p Picker, req Request, hosts []int) (int, func(Outcome)) {
	testFeeds.Lock()
	f := testFeeds.m[p]
	if f == nil {
		f = &hostFeed{}
		*f = newHostFeed(p)
		testFeeds.m[p] = f
	}
	testFeeds.Unlock()
	f.changed()
	f.sync(hosts)
	return p.Pick(req, hosts)
}

var (
	fail503 = Outcome{Status: 503}
	ok200   = Outcome{Status: 200}
	refused = Outcome{Err: errors.New("connection refused")}
)

func TestOutcomeFailed(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		want bool
	}{
		{"200", Outcome{Status: 200}, false},
		{"404", Outcome{Status: 404}, false},
		{"499", Outcome{Status: 499}, false},
		{"500", Outcome{Status: 500}, true},
		{"503", Outcome{Status: 503}, true},
		{"transport error", refused, true},
		{"timeout", Outcome{Timeout: true}, true},
		{"no response, no error", Outcome{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Failed(); got != tt.want {
				t.Errorf("%+v.Failed() = %v, want %v", tt.o, got, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		env  Env
		want string
	}{
		{"no endpoints", "p2c", Env{N: 0, Rand: newRand(1)}, "strategies: Env.N must be at least 1, got 0"},
		{"no rand", "p2c", Env{N: 3}, "strategies: Env.Rand is nil; a seeded *rand.Rand is required so that runs are repeatable"},
		{"bad spec", "p3c", Env{N: 3, Rand: newRand(1)}, `unknown strategy "p3c" (known: biased-random, bounded-load, dynamic-weights, ewma, fastest-response, key-hash, least-inflight, least-request, maglev, p2c, peak-ewma, predictive-least-conn, random, ring-hash, round-robin, server-load, weighted-random, weighted-round-robin)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.spec, tt.env)
			if err == nil {
				t.Fatalf("New(%q) = %v, want error", tt.spec, b)
			}
			if err.Error() != tt.want {
				t.Errorf("New(%q) error:\n got %s\nwant %s", tt.spec, err, tt.want)
			}
		})
	}
}

func TestBalancerDoneIdempotent(t *testing.T) {
	for _, spec := range allSpecs() {
		t.Run(spec, func(t *testing.T) {
			b, err := New(spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			if b.Spec() != spec {
				t.Errorf("Spec() = %q, want %q", b.Spec(), spec)
			}
			ep1, done1 := b.Pick(Request{})
			ep2, done2 := b.Pick(Request{})
			want := make([]int64, 3)
			want[ep1]++
			want[ep2]++
			if got := b.InFlight(); !slices.Equal(got, want) {
				t.Fatalf("InFlight() after two picks = %v, want %v", got, want)
			}
			done1(fail503)
			done1(fail503)
			done1(ok200)
			want[ep1]--
			if got := b.InFlight(); !slices.Equal(got, want) {
				t.Fatalf("InFlight() after done called thrice = %v, want %v", got, want)
			}
			done2(ok200)
			done2(ok200)
			if got := b.InFlight(); !slices.Equal(got, []int64{0, 0, 0}) {
				t.Fatalf("InFlight() after all done = %v, want zeros", got)
			}
		})
	}
}

// allSpecs lists every base strategy bare and wrapped in ejection.
func allSpecs() []string {
	var specs []string
	for _, name := range Names() {
		specs = append(specs, name, name+"+eject", name+"+eject(consecutive=2,duration=1s,max=0.5)")
	}
	return specs
}

// TestBalancerProperties drives every strategy with random sequences of
// picks, outcomes (some reported twice) and clock moves, and checks after
// every step that no ejected endpoint is picked, that the ejected set stays
// within its cap and that InFlight matches the picks not yet done.
func TestBalancerProperties(t *testing.T) {
	for _, spec := range allSpecs() {
		t.Run(spec, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				checkProperties(t, spec, seed)
			}
		})
	}
}

func checkProperties(t *testing.T, spec string, seed uint64) {
	script := newRand(seed * 7919)
	n := 1 + script.IntN(8)
	clock := newFakeClock()
	b, err := New(spec, Env{N: n, Rand: newRand(seed), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	limit := 0
	if s, _ := Parse(spec); len(s.Wrappers) > 0 {
		share := DefaultEjectMax
		if s.Wrappers[0].Params != nil {
			share = 0.5
		}
		limit = ejectionLimit(n, share)
	}
	type call struct {
		ep   int
		done func(Outcome)
	}
	var open []call
	var finished []func(Outcome)
	want := make([]int64, n)
	// Endpoint 0 always fails; the others fail one time in five.
	outcome := func(ep int) Outcome {
		switch {
		case ep == 0:
			return fail503
		case script.IntN(5) == 0:
			return Outcome{Timeout: true}
		default:
			return ok200
		}
	}
	for step := range 3000 {
		switch r := script.IntN(100); {
		case r < 50:
			ep, done := b.Pick(Request{})
			if ep == NoHost {
				// Only when every endpoint is ejected (the cap allows it at
				// n = 1) and no panic threshold is set.
				if ejected := b.Ejected(); len(ejected) != n {
					t.Fatalf("seed %d step %d: NoHost with %v of %d endpoints ejected", seed, step, ejected, n)
				}
				done(Outcome{Err: errors.New("no healthy upstream")})
				break
			}
			if ep < 0 || ep >= n {
				t.Fatalf("seed %d step %d: picked %d of %d endpoints", seed, step, ep, n)
			}
			if ejected := b.Ejected(); slices.Contains(ejected, ep) {
				t.Fatalf("seed %d step %d: picked ejected endpoint %d (ejected %v)", seed, step, ep, ejected)
			}
			open = append(open, call{ep, done})
			want[ep]++
		case r < 90 && len(open) > 0:
			i := script.IntN(len(open))
			c := open[i]
			open = slices.Delete(open, i, i+1)
			c.done(outcome(c.ep))
			want[c.ep]--
			finished = append(finished, c.done)
		case r < 95 && len(finished) > 0:
			finished[script.IntN(len(finished))](fail503)
		default:
			clock.Advance(time.Duration(script.Int64N(int64(2 * time.Second))))
		}
		if got := b.InFlight(); !slices.Equal(got, want) {
			t.Fatalf("seed %d step %d: InFlight() = %v, want %v", seed, step, got, want)
		}
		if ejected := b.Ejected(); len(ejected) > limit {
			t.Fatalf("seed %d step %d: %d endpoints ejected %v, cap %d", seed, step, len(ejected), ejected, limit)
		}
	}
	for _, c := range open {
		c.done(outcome(c.ep))
		c.done(outcome(c.ep))
	}
	if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
		t.Fatalf("seed %d: InFlight() after every done = %v, want zeros", seed, got)
	}
	if limit > 0 && b.Ejections() == 0 {
		t.Errorf("seed %d: endpoint 0 always failed but was never ejected", seed)
	}
}

func TestBalancerConcurrent(t *testing.T) {
	for _, spec := range []string{"round-robin", "random", "least-inflight+eject(consecutive=3,duration=1ms,max=0.5)", "p2c+eject(consecutive=3,duration=1ms,max=0.5)"} {
		t.Run(spec, func(t *testing.T) {
			clock := newFakeClock()
			const n = 8
			var mu sync.Mutex
			var events []Event
			b, err := New(spec, Env{N: n, Rand: newRand(3), Clock: clock, Events: func(e Event) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					r := newRand(uint64(g))
					for range 1000 {
						ep, done := b.Pick(Request{})
						o := ok200
						if ep == 0 || r.IntN(10) == 0 {
							o = fail503
						}
						if r.IntN(4) == 0 {
							clock.Advance(100 * time.Microsecond)
						}
						if r.IntN(8) == 0 {
							var twice sync.WaitGroup
							twice.Go(func() { done(o) })
							twice.Go(func() { done(o) })
							twice.Wait()
						} else {
							done(o)
						}
						_ = b.InFlight()
					}
				})
			}
			wg.Wait()
			if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
				t.Errorf("InFlight() after every done = %v, want zeros", got)
			}
			mu.Lock()
			defer mu.Unlock()
			ejects := 0
			for _, e := range events {
				if e.Kind == EventEject {
					ejects++
				}
			}
			if ejects != b.Ejections() {
				t.Errorf("%d eject events, Ejections() = %d", ejects, b.Ejections())
			}
		})
	}
}

func TestBalancerPickAllocations(t *testing.T) {
	for _, spec := range []string{"round-robin", "p2c", "least-inflight+eject"} {
		t.Run(spec, func(t *testing.T) {
			clock := newFakeClock()
			b, err := New(spec, Env{N: 100, Rand: newRand(1), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			// With an ejected endpoint the eject wrapper filters hosts.
			for range 200 {
				_, done := b.Pick(Request{})
				done(fail503)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				_, done := b.Pick(Request{})
				done(ok200)
			})
			// The pending call and its done; the eject wrapper chains one more done.
			if allocs > 3 {
				t.Errorf("Pick+done: %v allocations, want at most 3", allocs)
			}
		})
	}
}

// benchSpecs are the specs BenchmarkPickDone measures; each strategy's
// test file adds its own in an init function.
var benchSpecs = []string{"round-robin", "random", "least-inflight", "p2c", "p2c+eject", "least-inflight+eject"}

// BenchmarkPickDone measures one Pick and its done on a Balancer without
// contention, at 10, 100 and 1000 endpoints. Every request carries a key
// (a fresh one per request, from a SplitMix64 sequence) for the strategies
// that hash, and every outcome a reported load for those that read it.
func BenchmarkPickDone(b *testing.B) {
	specs := slices.Clone(benchSpecs)
	slices.Sort(specs)
	specs = slices.Compact(specs)
	for _, spec := range specs {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", spec, n), func(b *testing.B) {
				lb, err := New(spec, Env{N: n, Rand: newRand(1), Clock: newFakeClock()})
				if err != nil {
					b.Fatal(err)
				}
				// Where there is an ejection wrapper, one endpoint is ejected
				// (the clock never moves), so the filtered path is measured.
				for lb.Ejections() == 0 && strings.Contains(spec, "+eject") {
					_, done := lb.Pick(Request{})
					done(fail503)
				}
				ok := Outcome{Status: 200, Latency: 10 * time.Millisecond, Load: 3, HasLoad: true}
				var key uint64
				b.ReportAllocs()
				for b.Loop() {
					key += 0x9e3779b97f4a7c15
					_, done := lb.Pick(Request{Key: mix64(key), HasKey: true})
					done(ok)
				}
			})
		}
	}
}

// mix64 is SplitMix64's finaliser, a cheap bijective scramble.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// checkParse asserts that Parse(spec) succeeds when want is "" and
// otherwise fails with exactly want.
func checkParse(t *testing.T, spec, want string) {
	t.Helper()
	_, err := Parse(spec)
	switch {
	case want == "" && err != nil:
		t.Errorf("Parse(%q): %v", spec, err)
	case want != "" && (err == nil || err.Error() != want):
		t.Errorf("Parse(%q) error:\n got %v\nwant %s", spec, err, want)
	}
}

// newChecked builds spec for env. When wantErr is set it asserts that New
// fails with exactly that error and returns nil.
func newChecked(t *testing.T, spec string, env Env, wantErr string) *Balancer {
	t.Helper()
	b, err := New(spec, env)
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("New(%q) error = %v, want %s", spec, err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pickFastFailing makes picks on b, each answered at once on clock:
// endpoint 0 fails with 503 in 1 ms, the others succeed in ok. It returns
// the picks per endpoint (of n).
func pickFastFailing(b *Balancer, clock *fakeClock, n, picks int, ok time.Duration) []int {
	counts := make([]int, n)
	for range picks {
		ep, done := b.Pick(Request{})
		counts[ep]++
		if ep == 0 {
			clock.Advance(time.Millisecond)
			done(Outcome{Status: 503, Latency: time.Millisecond})
		} else {
			clock.Advance(ok)
			done(Outcome{Status: 200, Latency: ok})
		}
	}
	return counts
}

// PickOnce and End account for a request as PickConn and its done do: the
// pick is in flight until End, which the strategy sees.
func TestPickOnceAndEnd(t *testing.T) {
	b := newPinnedBalancer(t, "least-inflight", 2, 0, newFakeClock())
	first, _, done := b.PickOnce(Request{})
	second, _, done2 := b.PickOnce(Request{})
	if in := b.InFlight(); first == second || !slices.Equal(in, []int64{1, 1}) {
		t.Fatalf("two picks: %d and %d, in flight %v; want both instances, one each", first, second, in)
	}
	b.End(first, done, Outcome{Status: 200, Latency: time.Millisecond})
	if in := b.InFlight(); in[first] != 0 {
		t.Errorf("after End: in flight %v, want none on %d", in, first)
	}
	if ep, _, done3 := b.PickOnce(Request{}); ep != first {
		t.Errorf("least-inflight picked %d after End, want %d, the idle one", ep, first)
	} else {
		b.End(ep, done3, Outcome{Status: 200})
	}
	b.End(second, done2, Outcome{Status: 200})
	if in := b.InFlight(); !slices.Equal(in, []int64{0, 0}) {
		t.Errorf("in flight after every End: %v", in)
	}
}

package strategies

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// membersSpecs are the strategies TestSetMembersProperties drives: every
// base strategy bare and ejecting, and the wrappers with state of their
// own per host.
func membersSpecs() []string {
	return append(allSpecs(),
		"p2c+slowstart", "round-robin+pinned", "least-inflight+pinned+eject",
		"p2c+health", "round-robin+circuit(max_inflight=4)",
		"p2c+retry(other_host=true)+eject", "least-request+healthcheck")
}

// TestSetMembersProperties drives every strategy with random sequences of
// membership changes (a random subset, sometimes none, sometimes nil),
// host set changes, picks, outcomes and clock moves, and checks after
// every step that the hosts picked from are the members of the host set,
// that no pick goes outside them, and that NoHost comes only when none is
// left or every one left is ejected.
func TestSetMembersProperties(t *testing.T) {
	for _, spec := range membersSpecs() {
		t.Run(spec, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				checkMembers(t, spec, seed)
			}
		})
	}
}

func checkMembers(t *testing.T, spec string, seed uint64) {
	script := newRand(seed * 104729)
	n := 1 + script.IntN(8)
	clock := newFakeClock()
	b, err := New(spec, Env{N: n, Rand: newRand(seed), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	listed := seq(n)
	var members []int // nil: every endpoint
	var open []func(Outcome)
	for step := range 1500 {
		switch r := script.IntN(100); {
		case r < 3:
			switch script.IntN(4) {
			case 0:
				members = nil
			case 1:
				members = []int{}
			default:
				members = randomSubset(script, n)
			}
			if err := b.SetMembers(members); err != nil {
				t.Fatal(err)
			}
		case r < 5:
			listed = randomSubset(script, n)
			if len(listed) == 0 {
				listed = []int{script.IntN(n)}
			}
			if err := b.SetHosts(listed); err != nil {
				t.Fatal(err)
			}
		case r < 60:
			want := slices.DeleteFunc(slices.Clone(listed), func(h int) bool { return members != nil && !slices.Contains(members, h) })
			ep, done := b.Pick(Request{Key: script.Uint64(), HasKey: true})
			switch {
			case ep == NoHost:
				ejected := b.Ejected()
				if slices.ContainsFunc(want, func(h int) bool { return !slices.Contains(ejected, h) }) {
					t.Fatalf("seed %d step %d: NoHost with hosts %v, ejected %v", seed, step, want, ejected)
				}
				done(Outcome{Err: errors.New("no healthy upstream")})
			case !slices.Contains(want, ep):
				t.Fatalf("seed %d step %d: picked %d, not among the members %v of the host set %v", seed, step, ep, members, listed)
			default:
				open = append(open, done)
			}
		case r < 95 && len(open) > 0:
			i := script.IntN(len(open))
			o := ok200
			if script.IntN(4) == 0 {
				o = fail503
			}
			open[i](o)
			open = slices.Delete(open, i, i+1)
		default:
			clock.Advance(time.Duration(script.Int64N(int64(2 * time.Second))))
		}
		want := slices.DeleteFunc(slices.Clone(listed), func(h int) bool { return members != nil && !slices.Contains(members, h) })
		if got := b.Hosts(); !slices.Equal(got, want) {
			t.Fatalf("seed %d step %d: Hosts() = %v, want %v (host set %v, members %v)", seed, step, got, want, listed, members)
		}
	}
	for _, done := range open {
		done(ok200)
	}
	if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
		t.Fatalf("seed %d: InFlight() after every done = %v, want zeros", seed, got)
	}
}

// randomSubset returns a random subset of 0..n-1, ascending, possibly
// empty.
func randomSubset(r interface{ IntN(int) int }, n int) []int {
	set := []int{}
	for id := range n {
		if r.IntN(2) == 0 {
			set = append(set, id)
		}
	}
	return set
}

// TestSetMembersFeedsOnChange checks that the outermost Picker hears of a
// change of membership through UpdateHosts, once, at the next pick, and
// of nothing when a call changes nothing; and that with no member left it
// is not asked at all.
func TestSetMembersFeedsOnChange(t *testing.T) {
	b, err := New("round-robin", Env{N: 4, Rand: newRand(1), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	rec := &updateRecorder{}
	b.picker, b.feed = rec, newHostFeed(rec)
	pick := func(step string, want int, updates ...[]int) {
		t.Helper()
		before := len(rec.updates)
		ep, done := b.Pick(Request{})
		done(ok200)
		got := rec.updates[before:]
		if ep != want || !slices.EqualFunc(got, updates, slices.Equal[[]int]) {
			t.Errorf("%s: picked %d after UpdateHosts %v; want %d after %v", step, ep, got, want, updates)
		}
	}
	set := func(members []int) {
		t.Helper()
		if err := b.SetMembers(members); err != nil {
			t.Fatal(err)
		}
	}
	pick("first pick", 0, []int{0, 1, 2, 3})
	pick("no change", 0)
	set(nil)
	pick("SetMembers(nil), every endpoint a member already", 0)
	set([]int{3, 1, 1})
	pick("members 1 and 3", 1, []int{1, 3})
	set([]int{1, 3})
	pick("the same members again", 1)
	set([]int{})
	pick("no member", NoHost)
	pick("still none", NoHost)
	set([]int{1, 3})
	pick("the members before none, back", 1)
	set([]int{2})
	set([]int{1, 3})
	pick("a change undone before any pick", 1)
	if err := b.SetHosts([]int{0, 1}); err != nil {
		t.Fatal(err)
	}
	pick("host set 0 and 1, members 1 and 3", 1, []int{1})
	set(nil)
	pick("every endpoint a member again", 0, []int{0, 1})
	if got := b.Members(); got != nil {
		t.Errorf("Members() = %v after SetMembers(nil), want nil", got)
	}
	if err := b.SetMembers([]int{0, 4}); err == nil || err.Error() != "strategies: SetMembers: endpoint 4 is out of range 0..3" {
		t.Errorf("SetMembers with endpoint 4 of 4: error %v", err)
	}
	if got := b.Members(); got != nil {
		t.Errorf("Members() = %v after a refused SetMembers, want nil (unchanged)", got)
	}
}

// TestSetMembersEvents checks the events of membership changes: a leave
// or a join per endpoint that changed, none for a call that changes
// nothing, nor for an endpoint outside the host set.
func TestSetMembersEvents(t *testing.T) {
	var events []string
	clock := newFakeClock()
	b, err := New("p2c", Env{N: 4, Rand: newRand(1), Clock: clock, Events: func(e Event) {
		events = append(events, fmt.Sprintf("%s %d @%v", e.Kind, e.Endpoint, e.Time.Sub(epoch0)))
	}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		hosts, members []int
		want           []string
	}{
		{nil, []int{0, 1, 3}, []string{"leave 2 @1s"}},
		{nil, []int{3, 1, 0}, nil},
		{[]int{0, 1, 2}, nil, []string{"leave 3 @3s"}}, // SetHosts: 2 is in it, but no member
		{nil, []int{0, 1, 2, 3}, []string{"join 2 @4s"}},
		{nil, []int{}, []string{"leave 0 @5s", "leave 1 @5s", "leave 2 @5s"}},
		{nil, nil, []string{"join 0 @6s", "join 1 @6s", "join 2 @6s"}},
	}
	for i, st := range steps {
		clock.Advance(time.Second)
		events = nil
		if st.hosts != nil {
			if err := b.SetHosts(st.hosts); err != nil {
				t.Fatal(err)
			}
		} else if err := b.SetMembers(st.members); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(events, st.want) {
			t.Errorf("step %d: events %q, want %q", i, events, st.want)
		}
	}
}

// TestSetMembersNoHost checks a pick with no member left: NoHost, as with
// every endpoint ejected, its done callable, nothing counted in flight,
// no connection named.
func TestSetMembersNoHost(t *testing.T) {
	for _, spec := range []string{"round-robin", "p2c+eject", "least-inflight+pinned", "ring-hash+retry"} {
		t.Run(spec, func(t *testing.T) {
			b, err := New(spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.SetMembers([]int{}); err != nil {
				t.Fatal(err)
			}
			ep, conn, done := b.PickConn(Request{Key: 7, HasKey: true})
			if ep != NoHost || conn.Slot != -1 {
				t.Errorf("PickConn with no member: endpoint %d, slot %d; want NoHost, -1", ep, conn.Slot)
			}
			done(Outcome{Err: errors.New("no healthy upstream")})
			tk := b.PickTicket(Request{})
			b.Finish(tk, Outcome{})
			if tk.Endpoint() != NoHost {
				t.Errorf("PickTicket with no member: endpoint %d, want NoHost", tk.Endpoint())
			}
			if got := b.InFlight(); !slices.Equal(got, []int64{0, 0, 0}) {
				t.Errorf("InFlight() = %v, want zeros", got)
			}
			if got := b.Hosts(); len(got) != 0 {
				t.Errorf("Hosts() = %v, want none", got)
			}
			if got := b.Members(); got == nil || len(got) != 0 {
				t.Errorf("Members() = %#v, want empty, not nil", got)
			}
		})
	}
}

// TestSetMembersKeepsWrapperState checks that a change of membership is a
// change of the wrappers' hosts, not a new start: an endpoint ejected
// stays ejected while another leaves and comes back, and is picked again
// once re-admitted; an endpoint that leaves is not picked, and is picked
// again once it is back.
func TestSetMembersKeepsWrapperState(t *testing.T) {
	clock := newFakeClock()
	b, err := New("round-robin+eject(consecutive=2,duration=10s,max=1)", Env{N: 4, Rand: newRand(1), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// picks picks 8 times, failing endpoint 1's requests, and returns what
	// was picked, in order.
	picks := func() []int {
		var got []int
		for range 8 {
			ep, done := b.Pick(Request{})
			o := ok200
			if ep == 1 {
				o = fail503
			}
			done(o)
			got = append(got, ep)
		}
		return got
	}
	picks()
	if got := b.Ejected(); !slices.Equal(got, []int{1}) {
		t.Fatalf("after endpoint 1 failed twice: ejected %v, want [1]", got)
	}
	if err := b.SetMembers([]int{0, 1, 3}); err != nil {
		t.Fatal(err)
	}
	if got := picks(); slices.Contains(got, 1) || slices.Contains(got, 2) {
		t.Errorf("endpoint 1 ejected, 2 no member: picked %v", got)
	}
	if got := b.Ejected(); !slices.Equal(got, []int{1}) {
		t.Errorf("after endpoint 2 left: ejected %v, want [1] still", got)
	}
	if err := b.SetMembers(nil); err != nil {
		t.Fatal(err)
	}
	if got := picks(); slices.Contains(got, 1) || !slices.Contains(got, 2) {
		t.Errorf("endpoint 1 ejected, 2 back: picked %v; want 2 among them, 1 not", got)
	}
	if got := b.Ejected(); !slices.Equal(got, []int{1}) {
		t.Errorf("after endpoint 2 came back: ejected %v, want [1] still", got)
	}
	clock.Advance(10 * time.Second)
	if got := picks(); !slices.Contains(got, 1) {
		t.Errorf("endpoint 1 re-admitted: picked %v, want 1 among them", got)
	}
	if n := b.Ejections(); n < 1 {
		t.Errorf("Ejections() = %d, want at least the one of endpoint 1", n)
	}
}

// TestSetMembersLikeSetHosts checks that members narrow what every
// wrapper sees exactly as a host set does: a Balancer whose members
// change picks, request for request, what one whose host set changes to
// the same endpoints picks, for strategies with per-host state inside
// and outside the wrappers.
func TestSetMembersLikeSetHosts(t *testing.T) {
	for _, spec := range []string{"p2c+eject(consecutive=2,duration=1s,max=0.5)", "ring-hash+slowstart", "weighted-round-robin+pinned(max_age=100ms)", "least-request+health"} {
		t.Run(spec, func(t *testing.T) {
			const n = 6
			clockM, clockH := newFakeClock(), newFakeClock()
			byMembers, err := New(spec, Env{N: n, Rand: newRand(9), Clock: clockM, Connections: 3})
			if err != nil {
				t.Fatal(err)
			}
			byHosts, err := New(spec, Env{N: n, Rand: newRand(9), Clock: clockH, Connections: 3})
			if err != nil {
				t.Fatal(err)
			}
			script := newRand(4)
			for step := range 3000 {
				if step%200 == 199 {
					set := randomSubset(script, n)
					if len(set) == 0 {
						set = []int{0}
					}
					if err := byMembers.SetMembers(set); err != nil {
						t.Fatal(err)
					}
					if err := byHosts.SetHosts(set); err != nil {
						t.Fatal(err)
					}
				}
				req := Request{Key: script.Uint64N(64), HasKey: true}
				a, doneA := byMembers.Pick(req)
				h, doneH := byHosts.Pick(req)
				if a != h {
					t.Fatalf("step %d: picked %d through members, %d through the host set %v", step, a, h, byHosts.Hosts())
				}
				o := Outcome{Status: 200, Latency: time.Duration(1+script.IntN(20)) * time.Millisecond}
				if a == 2 && script.IntN(2) == 0 {
					o.Status = 503
				}
				doneA(o)
				doneH(o)
				d := time.Duration(script.IntN(50)) * time.Millisecond
				clockM.Advance(d)
				clockH.Advance(d)
			}
		})
	}
}

// BenchmarkMembersPickDone measures one Pick and its done on 10 endpoints
// for a Balancer never given members ("never"), one whose members were
// narrowed and then set back to every endpoint ("nil"), and one with 9
// members of the 10 ("9of10"). The ratios of nil and of 9of10 to never,
// in the same run, are what membership costs a pick; what its check
// costs a Balancer that never has members shows in BenchmarkPickDone
// against the same benchmark before SetMembers existed.
//
// Measured (2 cores, shared with other builds; -cpu 1, 300000 picks, the
// quietest of three runs): round-robin 93.0, 90.9 and 89.1 ns (nil/never
// 0.98, 9of10/never 0.96), p2c 92.5, 93.8 and 91.0 ns (1.01, 0.98),
// p2c+eject 151.9, 156.9 and 150.4 ns (1.03, 0.99). BenchmarkPickDone at
// n=10 before and after SetMembers, interleaved, best of ten: round-robin
// 124.5 and 127.5 ns, p2c 130.1 and 130.2 ns, p2c+eject 151.0 and 153.6
// ns: within the noise.
func BenchmarkMembersPickDone(b *testing.B) {
	for _, spec := range []string{"round-robin", "p2c", "p2c+eject"} {
		for _, members := range []string{"never", "nil", "9of10"} {
			b.Run(spec+"/members="+members, func(b *testing.B) {
				lb, err := New(spec, Env{N: 10, Rand: newRand(1), Clock: newFakeClock()})
				if err != nil {
					b.Fatal(err)
				}
				switch members {
				case "nil":
					if err := lb.SetMembers(seq(9)); err != nil {
						b.Fatal(err)
					}
					_, done := lb.Pick(Request{})
					done(ok200)
					if err := lb.SetMembers(nil); err != nil {
						b.Fatal(err)
					}
				case "9of10":
					if err := lb.SetMembers(seq(9)); err != nil {
						b.Fatal(err)
					}
				}
				ok := Outcome{Status: 200, Latency: 10 * time.Millisecond}
				// Untimed warm-up: the first benchmark of a process pays
				// for growing the heap, which would skew the ratios.
				for range 100000 {
					_, done := lb.Pick(Request{})
					done(ok)
				}
				b.ReportAllocs()
				for b.Loop() {
					_, done := lb.Pick(Request{})
					done(ok)
				}
			})
		}
	}
}

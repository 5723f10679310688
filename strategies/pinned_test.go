package strategies

import (
	"slices"
	"testing"
	"time"
)

// pickOK makes one pick on b, answered at once with 200, and returns the
// endpoint and connection.
func pickOK(t *testing.T, b *Balancer) (int, Conn) {
	t.Helper()
	ep, conn, done := b.PickConn(Request{})
	done(Outcome{Status: 200, Latency: time.Millisecond})
	return ep, conn
}

func newPinnedBalancer(t *testing.T, spec string, n, conns int, clock Clock) *Balancer {
	t.Helper()
	b, err := New(spec, Env{N: n, Clock: clock, Rand: newRand(1), Connections: conns})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPinnedSpreadsOverConnections: requests go to the connections in
// turn, each pinned to what the inner strategy picked when it opened.
func TestPinnedSpreadsOverConnections(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conns     int
		wantEps   []int
		wantSlots []int
	}{
		{"3 connections", 3, []int{0, 1, 2, 0, 1, 2, 0}, []int{0, 1, 2, 0, 1, 2, 0}},
		{"default: 1 connection", 0, []int{0, 0, 0, 0}, []int{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPinnedBalancer(t, "round-robin+pinned", 5, tc.conns, newFakeClock())
			var eps, slots []int
			for range tc.wantEps {
				ep, conn := pickOK(t, b)
				if conn.Opened != 1 {
					t.Errorf("pick %d: connection opened %d times, want 1", len(eps), conn.Opened)
				}
				eps, slots = append(eps, ep), append(slots, conn.Slot)
			}
			if !slices.Equal(eps, tc.wantEps) || !slices.Equal(slots, tc.wantSlots) {
				t.Errorf("endpoints %v slots %v, want %v and %v", eps, slots, tc.wantEps, tc.wantSlots)
			}
		})
	}
}

// TestPinnedMaxAge: without max_age a connection keeps its endpoint for
// ever; with it, a connection is re-picked at its first request at or
// after that age, and only then.
func TestPinnedMaxAge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    string
		advance time.Duration
		want    []int // endpoints of the 2 connections after advance
		opened  uint64
	}{
		{"no max_age", "round-robin+pinned", time.Hour, []int{0, 1}, 1},
		{"younger than max_age", "round-robin+pinned(max_age=30s)", 29 * time.Second, []int{0, 1}, 1},
		{"at max_age", "round-robin+pinned(max_age=30s)", 30 * time.Second, []int{2, 3}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			b := newPinnedBalancer(t, tc.spec, 4, 2, clock)
			pickOK(t, b)
			pickOK(t, b)
			clock.Advance(tc.advance)
			for i, want := range tc.want {
				ep, conn := pickOK(t, b)
				if ep != want || conn.Slot != i || conn.Opened != tc.opened {
					t.Errorf("connection %d: endpoint %d %+v, want endpoint %d, opened %d", i, ep, conn, want, tc.opened)
				}
			}
		})
	}
}

// TestPinnedNewcomers: instances that join get nothing from connections
// opened before they joined, until max_age recycles them.
func TestPinnedNewcomers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		spec          string
		wantNewcomers bool
	}{
		{"never recycled", "random+pinned", false},
		{"recycled at max_age", "random+pinned(max_age=10s)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			b := newPinnedBalancer(t, tc.spec, 6, 4, clock)
			if err := b.SetHosts([]int{0, 1, 2}); err != nil {
				t.Fatal(err)
			}
			for range 40 {
				pickOK(t, b)
			}
			if err := b.SetHosts(seq(6)); err != nil {
				t.Fatal(err)
			}
			newcomers := 0
			for range 60 { // one minute, a request a second
				clock.Advance(time.Second)
				if ep, _ := pickOK(t, b); ep >= 3 {
					newcomers++
				}
			}
			if got := newcomers > 0; got != tc.wantNewcomers {
				t.Errorf("newcomers got %d of 60 requests; want some: %v", newcomers, tc.wantNewcomers)
			}
		})
	}
}

// TestPinnedRePicks: a connection whose endpoint left the host set, or was
// ejected by a wrapper outside pinned, is re-picked at its next request;
// with every host ejected the pick is NoHost and names no connection.
func TestPinnedRePicks(t *testing.T) {
	clock := newFakeClock()
	b := newPinnedBalancer(t, "round-robin+pinned+eject(consecutive=1,max=1,success_rate=false)", 3, 1, clock)
	if ep, _ := pickOK(t, b); ep != 0 {
		t.Fatalf("first pick %d, want 0", ep)
	}
	if err := b.SetHosts([]int{1, 2}); err != nil {
		t.Fatal(err)
	}
	ep, conn := pickOK(t, b)
	if ep == 0 || conn.Opened != 2 {
		t.Fatalf("after 0 left: endpoint %d %+v, want another endpoint on a new connection", ep, conn)
	}
	if again, _ := pickOK(t, b); again != ep {
		t.Fatalf("the new connection moved from %d to %d", ep, again)
	}
	// Fail it: ejected, so the connection goes to the other host.
	first, _, done := b.PickConn(Request{})
	done(Outcome{Status: 503})
	next, conn := pickOK(t, b)
	if next == first || next == 0 || conn.Opened != 3 {
		t.Fatalf("after %d was ejected: endpoint %d %+v, want the remaining host on a new connection", first, next, conn)
	}
	// Fail that one too: both hosts ejected (max=1 lets eject take all).
	_, _, done = b.PickConn(Request{})
	done(Outcome{Status: 503})
	ep, conn, done = b.PickConn(Request{})
	done(Outcome{Status: 200})
	if ep != NoHost || conn.Slot != -1 {
		t.Errorf("every host ejected: endpoint %d %+v, want NoHost and no connection", ep, conn)
	}
}

// countingPicker is a round robin that counts its picks and dones.
type countingPicker struct{ picks, dones, next int }

func (c *countingPicker) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	c.picks++
	ep := hosts[c.next%len(hosts)]
	c.next++
	return ep, func(Outcome) { c.dones++ }
}

// TestPinnedInnerSeesConnections: the inner Picker picks once per
// connection opened and hears that request's outcome, not the others'.
func TestPinnedInnerSeesConnections(t *testing.T) {
	inner := &countingPicker{}
	clock := newFakeClock()
	p := newPinned(inner, 4, 3, 10*time.Second, clock)
	p.UpdateHosts(seq(4))
	for range 100 {
		_, done := p.Pick(Request{}, seq(4))
		done(Outcome{Status: 200})
	}
	if inner.picks != 3 || inner.dones != 3 {
		t.Fatalf("inner: %d picks, %d dones after 100 requests on 3 connections; want 3 and 3", inner.picks, inner.dones)
	}
	clock.Advance(10 * time.Second)
	for range 100 {
		_, done := p.Pick(Request{}, seq(4))
		done(Outcome{Status: 200})
	}
	if inner.picks != 6 || inner.dones != 6 {
		t.Errorf("inner after max_age: %d picks, %d dones; want 6 and 6", inner.picks, inner.dones)
	}
}

// TestPinnedRepeatable: the same seed and clock give the same picks.
func TestPinnedRepeatable(t *testing.T) {
	run := func() []int {
		clock := newFakeClock()
		b := newPinnedBalancer(t, "p2c+pinned(max_age=5s)", 8, 4, clock)
		var eps []int
		for range 200 {
			clock.Advance(100 * time.Millisecond)
			ep, _ := pickOK(t, b)
			eps = append(eps, ep)
		}
		return eps
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Errorf("two runs differ:\n%v\n%v", a, b)
	}
	if distinct := len(slices.Compact(slices.Sorted(slices.Values(a)))); distinct < 4 {
		t.Errorf("%d distinct endpoints over 200 picks with recycling; want at least 4", distinct)
	}
}

// TestPinnedParams: max_age must be a positive duration.
func TestPinnedParams(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"p2c+pinned(max_age=0s)", `pinned: max_age: want a duration > 0, got "0s"`},
		{"p2c+pinned(max_age=soon)", `pinned: max_age: want a duration like "5s", got "soon"`},
		{"p2c+pinned(age=1s)", `pinned: unknown parameter "age" (allowed: max_age)`},
	} {
		if _, err := Parse(tc.spec); err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) error %v, want %s", tc.spec, err, tc.want)
		}
	}
}

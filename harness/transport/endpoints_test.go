package transport

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
)

// TestSetEndpoints: the endpoints given are the instances every replica
// picks from, each at its URL; an instance without an address yet is
// picked once it has one; a bad id or a missing URL changes nothing; an
// empty set fails every request with ErrNoHost.
func TestSetEndpoints(t *testing.T) {
	urls := []*url.URL{backend(t, 0, 200, 0), backend(t, 1, 200, 0), backend(t, 2, 200, 0), backend(t, 3, 200, 0)}
	lbs := []*strategies.Balancer{newRoundRobin(t, 4), newRoundRobin(t, 4)}
	for _, lb := range lbs {
		if err := lb.SetMembers([]int{0, 1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	// Instance 3 has no address yet.
	b := NewClient(lbs, []*url.URL{urls[0], urls[1], urls[2], nil}, time.Second, 0)
	defer b.CloseIdleConnections()
	seq := 0
	// reached sends 12 requests, over both replicas, and returns the
	// instances that answered; each must be the one its route names.
	reached := func(step string) []int {
		t.Helper()
		var ids []int
		for range 12 {
			resp, err := send(t, b, seq)
			if err != nil {
				t.Fatalf("%s: request %d: %v", step, seq, err)
			}
			id, _ := strconv.Atoi(resp.Header.Get(faultyserver.InstanceHeader))
			if rt, ok := b.Take(uint64(seq)); !ok || rt.Instance != id {
				t.Fatalf("%s: request %d answered by instance %d, routed to %v", step, seq, id, rt)
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
			seq++
		}
		slices.Sort(ids)
		return ids
	}
	check := func(step string, want map[int]*url.URL) {
		t.Helper()
		if got := b.Endpoints(); !maps.EqualFunc(got, want, func(a, b *url.URL) bool { return a.String() == b.String() }) {
			t.Errorf("%s: Endpoints() = %v, want %v", step, got, want)
		}
		members := slices.Sorted(maps.Keys(want))
		for r, lb := range lbs {
			if got := lb.Members(); !slices.Equal(got, members) {
				t.Errorf("%s: replica %d's members %v, want %v", step, r, got, members)
			}
		}
		if got := reached(step); !slices.Equal(got, members) && len(members) > 0 {
			t.Errorf("%s: instances %v answered, want %v", step, got, members)
		}
	}
	check("at first", map[int]*url.URL{0: urls[0], 1: urls[1], 2: urls[2]})

	next := map[int]*url.URL{0: urls[0], 3: urls[3]}
	if err := b.SetEndpoints(next); err != nil {
		t.Fatal(err)
	}
	check("1 and 2 gone, 3 there", next)

	for _, bad := range []struct {
		eps  map[int]*url.URL
		want string
	}{
		{map[int]*url.URL{0: urls[0], 4: urls[3]}, "endpoint of instance 4: not one of the client's 4 instances (0 to 3)"},
		{map[int]*url.URL{-1: urls[0]}, "endpoint of instance -1: not one of the client's 4 instances (0 to 3)"},
		{map[int]*url.URL{1: nil}, "endpoint of instance 1: no URL"},
	} {
		if err := b.SetEndpoints(bad.eps); err == nil || err.Error() != bad.want {
			t.Errorf("SetEndpoints(%v): error %v, want %s", bad.eps, err, bad.want)
		}
	}
	check("after refused sets", next)

	if err := b.SetEndpoints(map[int]*url.URL{}); err != nil {
		t.Fatal(err)
	}
	if got := b.Endpoints(); len(got) != 0 {
		t.Errorf("no endpoints: Endpoints() = %v", got)
	}
	for r := range 2 {
		if _, err := send(t, b, seq); !errors.Is(err, ErrNoHost) {
			t.Errorf("no endpoints, replica %d: error %v, want ErrNoHost", r, err)
		}
		seq++
	}
	if err := b.SetEndpoints(nil); err != nil {
		t.Fatal(err)
	}
	if got := lbs[0].Members(); got == nil || len(got) != 0 {
		t.Errorf("SetEndpoints(nil): members %#v, want none (not every instance)", got)
	}
}

// TestProbeSkipsNonEndpoints: an instance without an address yet, or
// outside the endpoints, is not probed; one among them is.
func TestProbeSkipsNonEndpoints(t *testing.T) {
	var hits [2]atomic.Int64
	urls := make([]*url.URL, 2)
	for id := range urls {
		s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits[id].Add(1) }))
		defer s.Close()
		urls[id], _ = url.Parse(s.URL)
	}
	lb, err := strategies.New("round-robin+healthcheck(interval=10ms,timeout=10ms)", strategies.Env{N: 3, Clock: strategies.SystemClock{}, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := lb.Probes()
	if !ok {
		t.Fatal("no probes")
	}
	lbs := []*strategies.Balancer{lb}
	b := NewClient(lbs, []*url.URL{urls[0], urls[1], nil}, time.Second, 0)
	defer b.CloseIdleConnections()
	if err := b.SetEndpoints(map[int]*url.URL{0: urls[0]}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for id := range 3 {
		wg.Go(func() { Probe(ctx, pc, id, b, lbs) })
	}
	wg.Wait()
	if hits[0].Load() == 0 || hits[1].Load() != 0 {
		t.Errorf("probes: %d of instance 0, %d of instance 1 (outside the endpoints); want some, none", hits[0].Load(), hits[1].Load())
	}
}

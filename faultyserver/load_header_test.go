package faultyserver

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// occupy puts busy requests on workers and queued requests behind them in
// in, all served for a minute, and returns once Stats shows exactly that.
// It leaves no fault set. The requests are abandoned when the test ends.
// busy must equal the instance's workers when queued > 0.
func occupy(t *testing.T, in *instance, busy, queued int) {
	t.Helper()
	mustSetFault(t, in.s, Slow{Latency: Duration(time.Minute)})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i := range busy + queued {
		wg.Go(func() { in.get(ctx, "/") })
		waitStats(t, in.s, "occupying request", func(st Stats) bool { return st.InFlight+st.Queued == int64(i+1) })
	}
	in.s.ClearFault()
	if st := in.s.Stats(); st.InFlight != int64(busy) || st.Queued != int64(queued) {
		t.Fatalf("occupy: in_flight %d queued %d, want %d and %d", st.InFlight, st.Queued, busy, queued)
	}
}

// wantLoad checks that r is an answer with status and LoadHeader load.
func wantLoad(t *testing.T, what string, r result, status, load int) {
	t.Helper()
	if r.err != nil || r.status != status {
		t.Fatalf("%s: %d %v, want %d", what, r.status, r.err, status)
	}
	if got, want := r.header.Get(LoadHeader), strconv.Itoa(load); got != want {
		t.Errorf("%s: %s = %q, want %q", what, LoadHeader, got, want)
	}
}

// A request refused by a full queue reports the workers held plus the
// queued requests, itself not among them: workers + queue_limit, as the
// simulator reports for its refusal.
func TestLoadHeaderOnQueueFull(t *testing.T) {
	for _, tt := range []struct{ workers, limit int }{{1, 1}, {2, 3}} {
		t.Run(strconv.Itoa(tt.workers)+"+"+strconv.Itoa(tt.limit), func(t *testing.T) {
			in := start(t, Config{Workers: tt.workers, QueueLimit: tt.limit, Service: Fixed(ms(1))})
			occupy(t, in, tt.workers, tt.limit)
			wantLoad(t, "request at a full queue", in.get(t.Context(), "/"), http.StatusServiceUnavailable, tt.workers+tt.limit)
			if st := in.s.Stats(); st.Failed != 1 || st.InFlight != int64(tt.workers) || st.Queued != int64(tt.limit) {
				t.Errorf("stats %+v, want failed 1 and the occupying requests unchanged", st)
			}
		})
	}
}

// A failing request holds no worker: its answer reports the requests on
// workers and queued, whatever the fault's status and delay.
func TestLoadHeaderOnFail(t *testing.T) {
	in := start(t, Config{Workers: 2, Service: Fixed(ms(1))})
	occupy(t, in, 2, 1)
	mustSetFault(t, in.s, Fail{Status: 503, Delay: Duration(ms(1))})
	wantLoad(t, "fail 503 after 1ms", in.get(t.Context(), "/"), 503, 3)
	mustSetFault(t, in.s, Fail{Status: 500})
	wantLoad(t, "fail 500 at once", in.get(t.Context(), "/"), 500, 3)
}

// The failing share of error-rate answers like fail.
func TestLoadHeaderOnErrorRate(t *testing.T) {
	in := start(t, Config{Workers: 2, Service: Fixed(ms(1))})
	occupy(t, in, 2, 1)
	mustSetFault(t, in.s, ErrorRate{P: 1, Status: 502, Delay: Duration(ms(1))})
	wantLoad(t, "error-rate failure", in.get(t.Context(), "/"), 502, 3)
}

// A served request reports the others as it releases its worker. The
// error-rate fault's served share is a normal answer too.
func TestLoadHeaderOnNormalAnswer(t *testing.T) {
	in := start(t, Config{Workers: 3, Service: Fixed(ms(1))})
	wantLoad(t, "alone", in.get(t.Context(), "/"), 200, 0)
	occupy(t, in, 2, 0)
	wantLoad(t, "beside two busy workers", in.get(t.Context(), "/"), 200, 2)
	mustSetFault(t, in.s, ErrorRate{P: 0, Status: 503})
	wantLoad(t, "error-rate, served", in.get(t.Context(), "/"), 200, 2)
}

// A worker handed to a queued request on release counts once, as held by
// that request.
func TestLoadHeaderCountsTheHandedOverWorkerOnce(t *testing.T) {
	in := start(t, Config{Workers: 1, Service: Fixed(ms(1))})
	mustSetFault(t, in.s, Slow{Latency: Duration(ms(300))})
	var first result
	var wg sync.WaitGroup
	wg.Go(func() { first = in.get(t.Context(), "/") })
	waitStats(t, in.s, "first in flight", func(st Stats) bool { return st.InFlight == 1 })
	in.s.ClearFault()
	var second result
	wg.Go(func() { second = in.get(t.Context(), "/") })
	waitStats(t, in.s, "second queued", func(st Stats) bool { return st.Queued == 1 })
	wg.Wait()
	wantLoad(t, "first, handing its worker on", first, 200, 1)
	wantLoad(t, "second, alone", second, 200, 0)
}

// Answers of a closing or draining instance carry the load too.
func TestLoadHeaderOnClosedAndDraining(t *testing.T) {
	t.Run("drain", func(t *testing.T) {
		in := start(t, Config{Workers: 2, Service: Fixed(ms(1))})
		occupy(t, in, 1, 0)
		mustSetFault(t, in.s, Hang{})
		in.s.beginDrain()
		wantLoad(t, "hanging request at drain", in.get(t.Context(), "/"), 503, 1)
	})
	t.Run("close", func(t *testing.T) {
		in := start(t, Config{Workers: 1, Service: Fixed(ms(1))})
		mustSetFault(t, in.s, Fail{Status: 500, Delay: Duration(time.Minute)})
		var delayed result
		var wg sync.WaitGroup
		wg.Go(func() { delayed = in.get(t.Context(), "/") })
		time.Sleep(ms(20)) // likely under its delay; after Close it is 503 either way
		in.s.Close()
		wg.Wait()
		wantLoad(t, "fail delay cut by Close", delayed, 503, 0)
		wantLoad(t, "request after Close", in.get(t.Context(), "/"), 503, 0)
	})
	t.Run("close while serving", func(t *testing.T) {
		in := start(t, Config{Workers: 1, Service: Fixed(time.Minute)})
		var wg sync.WaitGroup
		results := make([]result, 2)
		for i := range results {
			wg.Go(func() { results[i] = in.get(t.Context(), "/") })
			waitStats(t, in.s, "arrival", func(st Stats) bool { return st.InFlight+st.Queued == int64(i+1) })
		}
		in.s.Close()
		wg.Wait()
		// Which of the two leaves the pool first is a race, so only the
		// range is fixed: at most the other one is still counted.
		for i, r := range results {
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("request %d: %d %v, want 503", i, r.status, r.err)
			}
			if l := r.header.Get(LoadHeader); l != "0" && l != "1" {
				t.Errorf("request %d: %s = %q, want 0 or 1", i, LoadHeader, l)
			}
		}
	})
}

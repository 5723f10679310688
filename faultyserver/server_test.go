package faultyserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" = valid
	}{
		{"valid", Config{Workers: 8, Service: Fixed(ms(10))}, ""},
		{"unlimited workers and queue", Config{Service: Fixed(0)}, ""},
		{"negative id", Config{ID: -2, Service: Fixed(0)}, "id: must be >= 0, or -1"},
		{"negative workers", Config{Workers: -1, Service: Fixed(0)}, "workers:"},
		{"negative queue limit", Config{QueueLimit: -3, Service: Fixed(0)}, "queue_limit:"},
		{"missing service", Config{Workers: 1}, "service: dist: required"},
		{"bad service", Config{Service: Dist{Kind: DistExponential}}, "service: mean:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: unexpected error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestServeAnswersOKWithInstanceHeader(t *testing.T) {
	in := start(t, Config{ID: 7, Workers: 2, Service: Fixed(0)})
	for _, path := range []string{"/", "/api/items?x=1", "/_chaos"} {
		r := in.get(t.Context(), path)
		if r.err != nil || r.status != http.StatusOK || r.body != "ok\n" {
			t.Fatalf("GET %s = %d %q, %v; want 200 \"ok\\n\"", path, r.status, r.body, r.err)
		}
		if got := r.header.Get(InstanceHeader); got != "7" {
			t.Errorf("GET %s: %s = %q, want 7", path, InstanceHeader, got)
		}
	}
	if st := in.s.Stats(); st.Served != 3 || st.ID != 7 {
		t.Errorf("stats %+v, want served 3 and id 7", st)
	}
}

func TestFIFOOrderWithOneWorker(t *testing.T) {
	const n = 6
	in := start(t, Config{Workers: 1, Service: Fixed(ms(25))})
	done := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if r := in.get(t.Context(), "/"); r.err != nil || r.status != http.StatusOK {
				t.Errorf("request %d: %d %v", i, r.status, r.err)
			}
			done <- i
		})
		// Let request i arrive before sending i+1.
		waitStats(t, in.s, "arrival", func(st Stats) bool { return st.InFlight+st.Queued+st.Served == int64(i+1) })
	}
	wg.Wait()
	close(done)
	var order []int
	for i := range done {
		order = append(order, i)
	}
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("completion order %v, want %v", order, want)
	}
}

func TestStatsCountInFlightAndQueuedExactly(t *testing.T) {
	in := start(t, Config{Workers: 2, Service: Fixed(10 * time.Second)})
	const n = 5
	cancels := make([]context.CancelFunc, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		wg.Go(func() { in.get(ctx, "/") })
		waitStats(t, in.s, "arrival", func(st Stats) bool { return st.InFlight+st.Queued == int64(i+1) })
	}
	st := in.s.Stats()
	if st.InFlight != 2 || st.Queued != 3 {
		t.Fatalf("with 5 requests on 2 workers: in_flight %d queued %d, want 2 and 3", st.InFlight, st.Queued)
	}
	cancels[3]() // one in the middle of the queue
	st = waitStats(t, in.s, "one dropped", func(st Stats) bool { return st.Dropped == 1 })
	if st.InFlight != 2 || st.Queued != 2 {
		t.Fatalf("after one queued request left: in_flight %d queued %d, want 2 and 2", st.InFlight, st.Queued)
	}
	for _, c := range cancels {
		c()
	}
	wg.Wait()
	st = waitStats(t, in.s, "all dropped", func(st Stats) bool { return st.Dropped == n })
	if st.InFlight != 0 || st.Queued != 0 || st.Served != 0 || st.Failed != 0 {
		t.Fatalf("after all left: %+v, want everything 0 but dropped", st)
	}
}

func TestQueueLimitAnswers503(t *testing.T) {
	in := start(t, Config{ID: 3, Workers: 1, QueueLimit: 1, Service: Fixed(10 * time.Second)})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 2 {
		wg.Go(func() { in.get(ctx, "/") })
		waitStats(t, in.s, "arrival", func(st Stats) bool { return st.InFlight+st.Queued == int64(i+1) })
	}
	r := in.get(t.Context(), "/")
	if r.err != nil || r.status != http.StatusServiceUnavailable {
		t.Fatalf("request beyond the queue limit: %d %v, want 503", r.status, r.err)
	}
	if r.header.Get(InstanceHeader) != "3" {
		t.Errorf("503 lacks %s", InstanceHeader)
	}
	if st := in.s.Stats(); st.Failed != 1 || st.InFlight != 1 || st.Queued != 1 {
		t.Errorf("stats %+v, want failed 1, in_flight 1, queued 1", st)
	}
}

func TestZeroWorkersServeAllAtOnce(t *testing.T) {
	in := start(t, Config{Workers: 0, QueueLimit: 1, Service: Fixed(10 * time.Second)})
	const n = 10
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { in.get(ctx, "/") })
	}
	waitStats(t, in.s, "all in flight", func(st Stats) bool { return st.InFlight == n && st.Queued == 0 })
	cancel()
	wg.Wait()
	waitStats(t, in.s, "all dropped", func(st Stats) bool { return st.Dropped == n && st.InFlight == 0 })
}

func TestAbandonedQueuedRequest(t *testing.T) {
	tests := []struct {
		name        string
		keep        bool
		wantServed  int64
		wantDropped int64
	}{
		{"dropped and frees its place", false, 2, 1},
		// B is served for nobody (its worker time is spent: BusyS covers
		// three requests), and counted dropped: no answer reached it.
		{"kept and served", true, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := start(t, Config{Workers: 1, Service: Fixed(ms(150)), KeepAbandoned: tt.keep})
			var wg sync.WaitGroup
			wg.Go(func() { in.get(t.Context(), "/") }) // A
			waitStats(t, in.s, "A in flight", func(st Stats) bool { return st.InFlight == 1 })
			ctx, cancel := context.WithCancel(t.Context())
			wg.Go(func() { in.get(ctx, "/") }) // B, abandoned
			waitStats(t, in.s, "B queued", func(st Stats) bool { return st.Queued == 1 })
			cancel()
			if !tt.keep {
				waitStats(t, in.s, "B dropped", func(st Stats) bool { return st.Dropped == 1 && st.Queued == 0 })
			}
			var c result
			wg.Go(func() { c = in.get(t.Context(), "/") }) // C
			wantQueued := int64(1)                         // C
			if tt.keep {
				wantQueued = 2 // B and C
			}
			waitStats(t, in.s, "C queued", func(st Stats) bool { return st.Queued == wantQueued })
			st := waitStats(t, in.s, "A served", func(st Stats) bool { return st.Served >= 1 })
			if !tt.keep && (st.InFlight != 1 || st.Queued != 0) {
				// B must not have taken the worker A released.
				t.Fatalf("right after A: in_flight %d queued %d, want C on the worker and nothing queued", st.InFlight, st.Queued)
			}
			wg.Wait()
			if c.err != nil || c.status != http.StatusOK {
				t.Fatalf("C: %d %v, want 200", c.status, c.err)
			}
			st = waitStats(t, in.s, "final counts", func(st Stats) bool { return st.Served == tt.wantServed })
			if tt.keep {
				st = waitStats(t, in.s, "B served for nobody", func(st Stats) bool { return st.BusyS >= 0.44 && st.InFlight == 0 })
			}
			if st.Dropped != tt.wantDropped || st.InFlight != 0 || st.Queued != 0 {
				t.Fatalf("final stats %+v, want dropped %d and nothing left", st, tt.wantDropped)
			}
		})
	}
}

func TestSlowFault(t *testing.T) {
	tests := []struct {
		name    string
		fault   Slow
		atLeast time.Duration
	}{
		{"factor multiplies", Slow{Factor: 3}, ms(30)},
		{"latency replaces", Slow{Latency: Duration(ms(50))}, ms(50)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := start(t, Config{Workers: 1, Service: Fixed(ms(10))})
			mustSetFault(t, in.s, tt.fault)
			r := in.get(t.Context(), "/")
			if r.err != nil || r.status != http.StatusOK {
				t.Fatalf("GET: %d %v, want 200", r.status, r.err)
			}
			if r.took < tt.atLeast {
				t.Errorf("took %v, want at least %v", r.took, tt.atLeast)
			}
		})
	}
}

func TestFailIsFastAndTakesNoWorker(t *testing.T) {
	in := start(t, Config{Workers: 1, Service: Fixed(ms(400))})
	var wg sync.WaitGroup
	var a, b result
	wg.Go(func() { a = in.get(t.Context(), "/") })
	waitStats(t, in.s, "A in flight", func(st Stats) bool { return st.InFlight == 1 })
	wg.Go(func() { b = in.get(t.Context(), "/") })
	waitStats(t, in.s, "B queued", func(st Stats) bool { return st.Queued == 1 })

	mustSetFault(t, in.s, Fail{Status: 502, Delay: Duration(ms(1))})
	c := in.get(t.Context(), "/")
	if c.err != nil || c.status != http.StatusBadGateway {
		t.Fatalf("request under fail: %d %v, want 502", c.status, c.err)
	}
	if c.took > ms(300) {
		t.Errorf("request under fail took %v, want it answered without waiting for the busy worker", c.took)
	}
	if c.header.Get(InstanceHeader) != "0" {
		t.Errorf("fail answer lacks %s", InstanceHeader)
	}
	if st := in.s.Stats(); st.InFlight != 1 || st.Queued != 1 || st.Failed != 1 {
		t.Errorf("stats after the failed request %+v, want A in flight, B queued, 1 failed", st)
	}
	wg.Wait()
	for name, r := range map[string]result{"A": a, "B": b} {
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("%s arrived before the fault: %d %v, want 200", name, r.status, r.err)
		}
	}
}

func TestFaultAppliesOnlyToLaterRequests(t *testing.T) {
	in := start(t, Config{Workers: 4, Service: Fixed(ms(100))})
	var wg sync.WaitGroup
	var before result
	wg.Go(func() { before = in.get(t.Context(), "/") })
	waitStats(t, in.s, "in flight", func(st Stats) bool { return st.InFlight == 1 })
	mustSetFault(t, in.s, Fail{Status: 500})
	after := in.get(t.Context(), "/")
	wg.Wait()
	if before.status != http.StatusOK {
		t.Errorf("request started before the fault: %d %v, want 200", before.status, before.err)
	}
	if after.status != http.StatusInternalServerError {
		t.Errorf("request started after the fault: %d %v, want 500", after.status, after.err)
	}
	in.s.ClearFault()
	if r := in.get(t.Context(), "/"); r.status != http.StatusOK {
		t.Errorf("request after ClearFault: %d %v, want 200", r.status, r.err)
	}
}

func TestErrorRateIsSeededAndProportional(t *testing.T) {
	const n = 300
	tests := []struct {
		name     string
		p        float64
		min, max int
	}{
		{"never", 0, 0, 0},
		{"always", 1, n, n},
		{"three in ten", 0.3, 60, 120},
	}
	run := func(t *testing.T, p float64, seed uint64) (string, int) {
		in := start(t, Config{Service: Fixed(0), Seed: seed})
		mustSetFault(t, in.s, ErrorRate{P: p, Status: 500})
		var seq strings.Builder
		fails := 0
		for range n {
			r := in.get(t.Context(), "/")
			switch r.status {
			case http.StatusOK:
				seq.WriteByte('.')
			case http.StatusInternalServerError:
				seq.WriteByte('x')
				fails++
			default:
				t.Fatalf("GET: %d %v, want 200 or 500", r.status, r.err)
			}
		}
		if st := in.s.Stats(); st.Failed != int64(fails) || st.Served != int64(n-fails) {
			t.Errorf("stats %+v, want failed %d served %d", st, fails, n-fails)
		}
		return seq.String(), fails
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq1, fails := run(t, tt.p, 42)
			if fails < tt.min || fails > tt.max {
				t.Errorf("%d of %d failed, want within [%d,%d]", fails, n, tt.min, tt.max)
			}
			if seq2, _ := run(t, tt.p, 42); seq2 != seq1 {
				t.Errorf("same seed, different outcomes:\n%s\n%s", seq1, seq2)
			}
		})
	}
}

func TestHangEndsWhenClientGivesUp(t *testing.T) {
	in := start(t, Config{Workers: 1, Service: Fixed(0)})
	mustSetFault(t, in.s, Hang{})
	ctx, cancel := context.WithTimeout(t.Context(), ms(100))
	defer cancel()
	r := in.get(ctx, "/")
	if !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("GET under hang: %d %v, want the client's deadline", r.status, r.err)
	}
	if r.took < ms(100) {
		t.Errorf("returned after %v, before the client's 100ms timeout", r.took)
	}
	st := waitStats(t, in.s, "hang dropped", func(st Stats) bool { return st.Dropped == 1 })
	if st.InFlight != 0 || st.Served != 0 || st.Failed != 0 {
		t.Errorf("stats %+v, want only dropped 1", st)
	}
	// The worker stayed free: a normal request still gets through at once.
	in.s.ClearFault()
	if r := in.get(t.Context(), "/"); r.status != http.StatusOK {
		t.Errorf("GET after hang: %d %v", r.status, r.err)
	}
}

func TestResetGivesTransportError(t *testing.T) {
	in := start(t, Config{Workers: 1, Service: Fixed(0)})
	mustSetFault(t, in.s, Reset{})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r := do(ctx, &http.Client{Transport: tr}, http.MethodGet, in.ts.URL+"/", nil)
	if r.err == nil {
		t.Fatalf("GET under reset: got %d, want a transport error", r.status)
	}
	if errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("GET under reset timed out instead of failing at once: %v", r.err)
	}
	if st := in.s.Stats(); st.Failed != 1 || st.Served != 0 {
		t.Errorf("stats %+v, want failed 1", st)
	}
}

func TestCloseReleasesWaitingRequests(t *testing.T) {
	in := start(t, Config{Workers: 1, Service: Fixed(time.Minute)})
	var wg sync.WaitGroup
	results := make([]result, 4)
	wg.Go(func() { results[0] = in.get(t.Context(), "/") }) // in service
	waitStats(t, in.s, "in flight", func(st Stats) bool { return st.InFlight == 1 })
	wg.Go(func() { results[1] = in.get(t.Context(), "/") }) // queued
	waitStats(t, in.s, "queued", func(st Stats) bool { return st.Queued == 1 })
	mustSetFault(t, in.s, Hang{})
	wg.Go(func() { results[2] = in.get(t.Context(), "/") }) // hanging
	// Hanging and delayed requests show in no counter; a request arriving
	// after Close would be answered 503 as well, so the sleeps only make the
	// intended path likely.
	time.Sleep(ms(20))
	mustSetFault(t, in.s, Fail{Status: 500, Delay: Duration(time.Minute)})
	wg.Go(func() { results[3] = in.get(t.Context(), "/") }) // fail delay
	time.Sleep(ms(20))

	in.s.Close()
	in.s.Close() // idempotent
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.status != http.StatusServiceUnavailable {
			t.Errorf("request %d after Close: %d %v, want 503", i, r.status, r.err)
		}
	}
	if r := in.get(t.Context(), "/"); r.status != http.StatusServiceUnavailable {
		t.Errorf("request arriving after Close: %d %v, want 503", r.status, r.err)
	}
	if st := in.s.Stats(); st.InFlight != 0 || st.Queued != 0 || st.Failed != 5 {
		t.Errorf("stats after Close %+v, want nothing left and failed 5", st)
	}
}

func TestHealthz(t *testing.T) {
	tests := []struct {
		name   string
		fault  Fault
		status int
	}{
		{"no fault", nil, 200},
		{"fail keeps health", Fail{Status: 503, Delay: 0}, 200},
		{"hang keeps health", Hang{}, 200},
		{"reset keeps health", Reset{}, 200},
		{"hang with health_status", Hang{Health{Status: 503}}, 503},
		{"slow with health_status", Slow{Factor: 2, Health: Health{Status: 500}}, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := start(t, Config{ID: 2, Workers: 1, Service: Fixed(0)})
			if tt.fault != nil {
				mustSetFault(t, in.s, tt.fault)
			}
			r := in.get(t.Context(), HealthPath)
			if r.err != nil || r.status != tt.status {
				t.Fatalf("GET /healthz: %d %v, want %d", r.status, r.err, tt.status)
			}
			if tt.status == 200 && r.body != "ok\n" {
				t.Errorf("body %q, want \"ok\\n\"", r.body)
			}
			if r.header.Get(InstanceHeader) != "2" {
				t.Errorf("healthz lacks %s", InstanceHeader)
			}
			if st := in.s.Stats(); st.Served+st.Failed+st.Dropped != 0 {
				t.Errorf("health check was counted: %+v", st)
			}
		})
	}
}

func TestResetReseeds(t *testing.T) {
	cfg := Config{Workers: 1, Seed: 42, Service: Dist{Kind: DistNormal, Mean: Duration(10 * time.Millisecond), SD: Duration(3 * time.Millisecond)}}
	draw := func(s *Server) []time.Duration {
		var out []time.Duration
		for range 20 {
			out = append(out, s.plan().Service)
		}
		return out
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first := draw(a)
	a.Reset()
	again := draw(a)
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fresh := draw(b)
	if !slices.Equal(first, again) || !slices.Equal(first, fresh) {
		t.Errorf("service times after Reset differ from a new server's:\n%v\n%v\n%v", first, again, fresh)
	}
}

func TestLoadHeaderReportsOtherRequestsInTheInstance(t *testing.T) {
	const n = 3
	in := start(t, Config{Workers: 1, Service: Fixed(ms(30))})
	loads := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := in.get(t.Context(), "/")
			if r.err != nil || r.status != http.StatusOK {
				t.Errorf("request %d: %d %v", i, r.status, r.err)
			}
			loads <- r.header.Get(LoadHeader)
		})
		waitStats(t, in.s, "arrival", func(st Stats) bool { return st.InFlight+st.Queued+st.Served == int64(i+1) })
	}
	wg.Wait()
	close(loads)
	var got []string
	for l := range loads {
		got = append(got, l)
	}
	// One worker, FIFO: as each answers, the requests behind it remain.
	if want := []string{"2", "1", "0"}; !slices.Equal(got, want) {
		t.Errorf("%s by completion = %v, want %v", LoadHeader, got, want)
	}

	if err := in.s.SetFault(Fail{Status: 503}); err != nil {
		t.Fatal(err)
	}
	if r := in.get(t.Context(), "/"); r.status != 503 || r.header.Get(LoadHeader) != "0" {
		t.Errorf("failed request: %d with %s %q, want 503 with 0", r.status, LoadHeader, r.header.Get(LoadHeader))
	}
	if r := in.get(t.Context(), HealthPath); r.header.Get(LoadHeader) != "" {
		t.Errorf("health check carries %s %q; only service responses do", LoadHeader, r.header.Get(LoadHeader))
	}
}

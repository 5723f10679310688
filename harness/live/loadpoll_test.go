package live

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// loadBackends starts in-process instances with one worker and a 10 s
// service time and holds held[i] requests on instance i (one serving, the
// rest queued) until the test ends. It returns their control clients.
func loadBackends(t *testing.T, held []int) []loadStatter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stats := make([]loadStatter, len(held))
	for id, n := range held {
		srv, err := faultyserver.New(faultyserver.Config{ID: id, Workers: 1, Service: faultyserver.Fixed(10 * time.Second), Seed: uint64(id)})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		c := &faultyserver.Client{BaseURL: ts.URL}
		stats[id] = c
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/", nil)
				if resp, err := ts.Client().Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
		t.Cleanup(ts.Close)
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, err := c.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.InFlight+st.Queued == int64(n) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d: %d in flight and %d queued, want %d held", id, st.InFlight, st.Queued, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Cleanup(func() { cancel(); wg.Wait() }) // runs before the servers close
	return stats
}

// failingStats is an instance whose stats cannot be read.
type failingStats struct{}

func (failingStats) Stats(context.Context) (faultyserver.Stats, error) {
	return faultyserver.Stats{}, errors.New("connection refused")
}

func TestLoadPollerReadsInstances(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	stats := loadBackends(t, []int{0, 1, 3})
	board := strategies.NewLoadBoard()
	p := newLoadPoller(stats, board)
	p.poll(context.Background(), 2*time.Second)
	if loads, v := board.Snapshot(); v != 1 || !slices.Equal(loads, []float64{0, 1, 3}) {
		t.Fatalf("after one poll: %v version %d, want [0 1 3] version 1", loads, v)
	}

	// An instance that cannot be read keeps its last load.
	p.stats[2] = failingStats{}
	p.poll(context.Background(), 2*time.Second)
	if loads, v := board.Snapshot(); v != 2 || !slices.Equal(loads, []float64{0, 1, 3}) {
		t.Fatalf("after a failed read: %v version %d, want [0 1 3] version 2", loads, v)
	}
	if p.reads != 6 || p.errs != 1 || p.last == nil {
		t.Errorf("reads %d, errs %d, last %v; want 6, 1 and an error", p.reads, p.errs, p.last)
	}
	if n := p.note("server-load(report_interval=1s)"); len(n) != 1 {
		t.Errorf("notes %q, want one on the failed read", n)
	}
}

// TestLoadPollerRuns runs the poller on its interval: it publishes at once
// and then every interval, and stops when its context ends.
func TestLoadPollerRuns(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	stats := loadBackends(t, []int{2, 0})
	board := strategies.NewLoadBoard()
	p := newLoadPoller(stats, board)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { p.run(ctx, 20*time.Millisecond) })
	for {
		if _, v := board.Snapshot(); v >= 5 {
			break
		}
		if time.Since(start) > 10*time.Second {
			cancel()
			t.Fatal("fewer than 5 polls in 10 s at a 20 ms interval")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if loads, _ := board.Snapshot(); !slices.Equal(loads, []float64{2, 0}) {
		t.Errorf("loads %v, want [2 0]", loads)
	}
	if p.errs != 0 {
		t.Errorf("%d failed reads: %v", p.errs, p.last)
	}
}

func TestCheckLoadPolling(t *testing.T) {
	for _, tt := range []struct {
		name       string
		strategy   string
		generators int
		wantErr    bool
	}{
		{"one generator", "server-load(report_interval=1s)", 1, false},
		{"spread, per-response load", "server-load", 2, false},
		{"spread, polled load", "server-load(report_interval=1s)", 2, true},
		{"lbchaos proxy, per-response load", "lbchaos:server-load", 1, false},
		{"lbchaos proxy, polled load", "lbchaos:server-load(report_interval=1s)", 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := &experiments.Experiment{Strategies: []string{"p2c", tt.strategy}, Generators: tt.generators}
			err := checkLoadPolling(exp)
			if (err != nil) != tt.wantErr {
				t.Fatalf("checkLoadPolling: %v, want error %v", err, tt.wantErr)
			}
			want := map[bool]string{
				false: `strategies[1] server-load(report_interval=1s): report_interval polls the instances' control API from the load generator, which a spread run's generators (generators: 2) do not reach; use generators: 1`,
				true:  `strategies[1] lbchaos:server-load(report_interval=1s): report_interval needs the engine's load poller, which lbchaos proxy does not run; use the strategy without the proxy`,
			}[proxyspec.IsProxy(tt.strategy)]
			if err != nil && err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}

// TestRunPollsLoadForServerLoad runs server-load on the shared, polled
// load through the real engine: instance 0 holds every request 10 s from
// the start (until the client's 2 s timeout), so from the first poll after
// the start on it is the most loaded (the others, at 10 ms with 4 workers,
// hold a few) and a full scan does not pick it; without a poller every
// instance would count as 0 and get a quarter of the traffic.
func TestRunPollsLoadForServerLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	const name = "server-load(report_interval=100ms,choice_count=0)"
	exp := runtest.MustExperiment(t, "loadpoll-mini", `
seed: 2
duration: 2s
rate: 300
timeout: 2s
replicas: 3
instances: {count: 4, workers: 4, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: slow, factor: 1000}}
strategies: ["`+name+`"]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := runtest.StrategyByName(t, sum, name)
	runtest.CheckAccounting(t, st)
	if st.Requests < 500 {
		t.Errorf("only %d requests at 300 req/s for 2 s", st.Requests)
	}
	t.Logf("faulty share %.4f", st.FaultyShare)
	if st.FaultyShare > 0.1 {
		t.Errorf("faulty share %v, want under 0.1: the polled load steers every replica away from the slow instance", st.FaultyShare)
	}
}

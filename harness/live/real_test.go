package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"
	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/reports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// run runs exp through the driver with the real engine.
func run(ctx context.Context, exp *experiments.Experiment, opts Options) (*reports.Summary, error) {
	return harness.Run(ctx, exp, harness.Options{Engine: New(opts)})
}

func TestRunFastFailShowsTheBlackHole(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "fast-fail-mini", `
seed: 3
duration: 2s
rate: 600
instances: {count: 5, workers: 4, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies: [round-robin, least-inflight, "least-inflight+eject(consecutive=5,duration=500ms)"]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Partial || len(sum.Strategies) != 3 {
		t.Fatalf("partial=%v strategies=%d", sum.Partial, len(sum.Strategies))
	}
	rr := runtest.StrategyByName(t, sum, "round-robin")
	li := runtest.StrategyByName(t, sum, "least-inflight")
	ej := runtest.StrategyByName(t, sum, "least-inflight+eject(consecutive=5,duration=500ms)")
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		if st.Requests < 1000 {
			t.Errorf("%s: only %d requests at 600 req/s for 2 s", st.Name, st.Requests)
		}
		if st.Instances[0].ErrorRatio != 1 {
			t.Errorf("%s: faulty instance error ratio %v, want 1", st.Name, st.Instances[0].ErrorRatio)
		}
		for _, in := range st.Instances[1:] {
			if in.Errors != 0 {
				t.Errorf("%s: healthy instance %d had %d errors", st.Name, in.ID, in.Errors)
			}
		}
	}
	// Round robin gives the faulty instance exactly its turn.
	if rr.FaultyShare < 0.19 || rr.FaultyShare > 0.21 {
		t.Errorf("round-robin faulty share %v, want 0.2", rr.FaultyShare)
	}
	// Least in-flight sees it as the least loaded instance.
	if li.FaultyShare < 1.5*rr.FaultyShare {
		t.Errorf("least-inflight faulty share %v, want well above round-robin's %v", li.FaultyShare, rr.FaultyShare)
	}
	// Ejection takes it out after 5 failures per re-admission.
	if ej.Ejections < 1 || ej.ErrorRatio > rr.ErrorRatio/3 {
		t.Errorf("eject: %d ejections, error ratio %v (round-robin %v)", ej.Ejections, ej.ErrorRatio, rr.ErrorRatio)
	}
	if len(ej.Events) == 0 || ej.Events[0].Kind != "eject" || ej.Events[0].Instance != 0 {
		t.Errorf("eject events: %+v", ej.Events)
	}
	if !equalInts(sum.FaultyInstances, []int{0}) {
		t.Errorf("faulty instances %v", sum.FaultyInstances)
	}
}

func equalInts(a, b []int) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestRunFaultWindowAndTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "window", `
duration: 3s
arrival: constant
rate: 200
timeout: 300ms
slow_threshold: 100ms
instances: {count: 2, workers: 0, service: {dist: fixed, value: 5ms}}
faults:
  - {instance: 1, at: 1s, until: 2s, fault: {mode: hang}}
strategies: [round-robin]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]
	runtest.CheckAccounting(t, st)
	in1 := st.Timeline.Instances[1]
	// A fault applies to requests that start after the control call, which
	// a loaded machine may make a few milliseconds late: the second before
	// the window is clean, the second inside it (almost) all timeouts, and
	// the second after it clean but for requests sent just before the clear.
	if in1.Errors[0] != 0 {
		t.Errorf("second 0: %d errors before the fault window", in1.Errors[0])
	}
	if errs, reqs := in1.Errors[1], in1.Requests[1]; reqs < 80 || float64(errs) < 0.9*float64(reqs) {
		t.Errorf("second 1: %d of %d requests failed, want (nearly) all of about 100", errs, reqs)
	}
	if errs, reqs := in1.Errors[2], in1.Requests[2]; float64(errs) > 0.1*float64(reqs) {
		t.Errorf("second 2: %d of %d requests failed after the fault was cleared", errs, reqs)
	}
	if st.Instances[1].Errors != st.Instances[1].Timeouts {
		t.Errorf("instance 1: %d errors but %d timeouts; every error here is a timeout", st.Instances[1].Errors, st.Instances[1].Timeouts)
	}
	if st.Instances[1].Timeouts < 80 || st.Instances[0].Timeouts != 0 {
		t.Errorf("timeouts: instance 0 %d, instance 1 %d", st.Instances[0].Timeouts, st.Instances[1].Timeouts)
	}
	// Timeouts count as slow and at their timeout.
	if st.TimeoutRatio <= 0 || st.SlowRatio < st.TimeoutRatio {
		t.Errorf("timeout ratio %v, slow ratio %v", st.TimeoutRatio, st.SlowRatio)
	}
	if st.LatencyMs.Max < 300 || st.LatencyMs.Max > 600 {
		t.Errorf("max latency %v ms, want about the 300 ms timeout", st.LatencyMs.Max)
	}
	if len(sum.Faults) != 1 || sum.Faults[0].StartS != 1 || sum.Faults[0].EndS != 2 {
		t.Errorf("fault windows %+v", sum.Faults)
	}
}

func TestRunClientQueueAtConnectionBound(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	exp := runtest.MustExperiment(t, "bound", `
duration: 1s
arrival: constant
rate: 100
timeout: 400ms
instances: {count: 2, workers: 0, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: hang}}
strategies: [round-robin]
`)
	sum, err := run(context.Background(), exp, Options{MaxConnsPerInstance: 2})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]
	runtest.CheckAccounting(t, st)
	in0 := st.Instances[0]
	// Requests that timed out waiting for a connection are timeouts too.
	if in0.Requests < 40 || in0.Errors != in0.Requests || in0.Timeouts != in0.Requests {
		t.Errorf("instance 0: %d requests, %d errors, %d timeouts; want all timed out", in0.Requests, in0.Errors, in0.Timeouts)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "bound of 2 connections") {
		t.Errorf("notes do not mention the connection bound: %q", sum.Notes)
	}
}

func TestRunResetIsAttributed(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	exp := runtest.MustExperiment(t, "reset", `
duration: 1s
arrival: constant
rate: 200
instances: {count: 4, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 2, at: 0s, fault: {mode: reset}}
strategies: [round-robin]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]
	runtest.CheckAccounting(t, st)
	if st.Unattributed != 0 {
		t.Errorf("%d unattributed requests", st.Unattributed)
	}
	if in := st.Instances[2]; in.Requests < 40 || in.Errors != in.Requests {
		t.Errorf("reset instance: %d requests, %d errors; want about 50, all failed", in.Requests, in.Errors)
	}
}

func TestRunInterruptIsPartialAndLeavesNothing(t *testing.T) {
	exp := runtest.MustExperiment(t, "interrupt", `
duration: 30s
rate: 300
instances: {count: 3, workers: 1, service: {dist: fixed, value: 50ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: hang}}
strategies: [round-robin, p2c]
`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	start := time.Now()
	sum, err := run(ctx, exp, Options{})
	if !errors.Is(err, harness.ErrInterrupted) {
		t.Fatalf("err = %v, want harness.ErrInterrupted", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("interrupt took %v to stop", took)
	}
	if !sum.Partial || len(sum.Strategies) != 1 || !sum.Strategies[0].Partial {
		t.Fatalf("partial=%v strategies=%d", sum.Partial, len(sum.Strategies))
	}
	st := sum.Strategies[0]
	if st.Requests == 0 || st.ElapsedS > 2 {
		t.Errorf("requests %d, elapsed %v s", st.Requests, st.ElapsedS)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "interrupted") {
		t.Errorf("notes do not mention the interruption: %q", sum.Notes)
	}
	// goleak in TestMain checks that no backend or request goroutine is left.
}

func TestRunRejectsFaultOnMissingInstance(t *testing.T) {
	exp := runtest.MustExperiment(t, "missing", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{instance: 1, fault: {mode: hang}}]
strategies: [random]
`)
	exp.Faults[0].Instance = 5 // as if the fleet came up smaller than the file says
	_, err := run(context.Background(), exp, Options{})
	if err == nil || !strings.Contains(err.Error(), "instance 5 does not exist") {
		t.Fatalf("err = %v", err)
	}
}

// lostControl is the process provider with instance 1's control API
// answered by a stand-in that passes health checks and fails every other
// call: a fault on instance 1 cannot be set.
type lostControl struct {
	process.Provider
	control string // the stand-in's base URL
}

func (p lostControl) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	fl, err := p.Provider.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return lostFleet{fl, p.control}, nil
}

type lostFleet struct {
	fleet.Fleet
	control string
}

func (f lostFleet) Backends() []fleet.Backend {
	bs := append([]fleet.Backend(nil), f.Fleet.Backends()...)
	bs[1].Control = &faultyserver.Client{BaseURL: f.control}
	return bs
}

// TestRunFaultFailureEndsTheStrategy: a fault that cannot be applied in the
// middle of an attack ends it there, and the strategy is partial, measured
// up to that moment: not a full run whose generator fell behind.
func TestRunFaultFailureEndsTheStrategy(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a second")
	}
	exp := runtest.MustExperiment(t, "lost", `
duration: 4s
rate: 200
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{instance: 1, at: 1s, fault: {mode: hang}}]
strategies: [random, p2c]
`)
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == faultyserver.HealthPath {
			return
		}
		http.Error(w, "control lost", http.StatusInternalServerError)
	}))
	defer standIn.Close()
	sum, err := run(context.Background(), exp, Options{Provider: lostControl{control: standIn.URL}})
	if err == nil || !strings.Contains(err.Error(), "strategy random: faults[0]: set hang fault on instance 1") {
		t.Fatalf("err = %v", err)
	}
	if sum == nil || !sum.Partial || len(sum.Strategies) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	st := sum.Strategies[0]
	if !st.Partial || st.ElapsedS < 0.9 || st.ElapsedS > 2 || st.GeneratorBehind {
		t.Errorf("partial %v, elapsed %v s, behind %v: want a partial strategy of about 1 s that kept up", st.Partial, st.ElapsedS, st.GeneratorBehind)
	}
	if st.AchievedRate < 150 || st.AchievedRate > 250 {
		t.Errorf("achieved rate %v over the time it ran, want about 200", st.AchievedRate)
	}
	if strings.Contains(strings.Join(sum.Notes, "\n"), "fell behind") {
		t.Errorf("notes say the generator fell behind: %q", sum.Notes)
	}
}

func TestConnsPerInstance(t *testing.T) {
	tests := []struct {
		name      string
		limit     uint64
		instances int
		p         fleet.Provider
		want      int
	}{
		{"process holds both ends", 20512, 10, process.Provider{}, 1000},
		{"tiny limit still allows one", 100, 10, process.Provider{}, 1},
		{"huge limit is capped", 1 << 30, 1, process.Provider{}, 20000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := connsPerInstance(tt.limit, tt.instances, tt.p); got != tt.want {
				t.Errorf("connsPerInstance(%d, %d) = %d, want %d", tt.limit, tt.instances, got, tt.want)
			}
		})
	}
}

func TestRunRefusesContainerFaultsWithoutContainers(t *testing.T) {
	exp := runtest.MustExperiment(t, "frozen", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{instance: 1, at: 0s, until: 500ms, fault: {mode: pause}}]
strategies: [random]
`)
	sum, err := run(context.Background(), exp, Options{})
	want := `frozen.yaml: faults[0]: mode "pause" acts on containers, which process backends do not have; run with --backends docker (or kube)`
	if err == nil || err.Error() != want || sum != nil {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestRunWritesRawData(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	exp := runtest.MustExperiment(t, "raw", `
duration: 1s
arrival: constant
rate: 200
instances: {count: 3, service: {dist: fixed, value: 2ms}}
faults: [{instance: 1, fault: {mode: fail}}]
strategies: [round-robin]
`)
	dir := t.TempDir()
	sum, err := run(context.Background(), exp, Options{RawDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]

	// The transport's share of every answered request's latency: here
	// every request is answered by the instance, which says its own time.
	if o := st.TransportOverheadMs; o == nil {
		t.Error("no transport_overhead_ms")
	} else {
		t.Logf("transport overhead: %+v; latency %+v", *o, st.LatencyMs)
		if o.Count != st.Requests || !(o.P1 > 0 && o.P1 <= o.P50 && o.P50 <= o.P99 && o.P99 <= o.Max) || o.P50 >= st.LatencyMs.P50 {
			t.Errorf("transport overhead %+v over %d requests with latency p50 %v ms: want every request, ordered percentiles, below the latency",
				*o, st.Requests, st.LatencyMs.P50)
		}
	}

	// Every result, in Vegeta's own encoding.
	// Without response headers, bodies and sequence numbers, but with the
	// bodies' lengths.
	dec := vegeta.NewDecoder(openResults(t, dir, "round-robin"))
	var n, failed, noBytes int64
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("decode result %d: %v", n, err)
			}
			break
		}
		n++
		if r.Code == 503 {
			failed++
		}
		if r.BytesIn == 0 {
			noBytes++
		}
		if r.Headers != nil || r.Body != nil || r.Seq != 0 || r.Attack != "round-robin" || r.Timestamp.IsZero() || r.Latency <= 0 || r.Method != "GET" || r.URL == "" {
			t.Errorf("result %d: headers %v, body %q, seq %d, attack %q, timestamp %v, latency %v, %s %s; want no headers, body or seq and the rest",
				n, r.Headers, r.Body, r.Seq, r.Attack, r.Timestamp, r.Latency, r.Method, r.URL)
		}
	}
	if noBytes > 0 {
		t.Errorf("raw results: %d of %d with BytesIn 0; every response has a body", noBytes, n)
	}
	if n != st.Requests || failed != st.Instances[1].Errors {
		t.Errorf("raw results: %d (%d failed), summary: %d (%d failed)", n, failed, st.Requests, st.Instances[1].Errors)
	}

	// The histograms, as an HdrHistogram log: one interval a second (the
	// 1 s attack: one), overall and per instance.
	hf, err := os.Open(filepath.Join(dir, "round-robin", reports.HDRLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	lr := hdrhistogram.NewHistogramLogReader(hf)
	var tags []string
	var total int64
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		tags = append(tags, h.Tag())
		if h.Tag() == "all" {
			total += h.TotalCount()
		}
		if d := h.EndTimeMs() - h.StartTimeMs(); d != 1000 {
			t.Errorf("interval %s of %d ms, want 1000", h.Tag(), d)
		}
	}
	if strings.Join(tags, ",") != "all,instance-0,instance-1,instance-2" || total != st.Requests {
		t.Errorf("histogram log: tags %v, total %d (want %d)", tags, total, st.Requests)
	}
}

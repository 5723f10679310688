package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// fixedOverhead is a calibration whose every request spends exactly ms.
func fixedOverhead(ms, pre float64) *Calibration {
	return &Calibration{From: "test", PreShare: pre, Default: &reports.Overhead{Count: 1, Quantiles: []float64{ms, ms}}}
}

// traceCalibrated is traceSim with a calibration.
func traceCalibrated(t *testing.T, exp *experiments.Experiment, name string, cal *Calibration) (*reports.Strategy, []simResult) {
	t.Helper()
	var rs []simResult
	hooks := simHooks{result: func(o engine.Outcome, so strategies.Outcome) {
		rs = append(rs, simResult{o, so})
	}}
	m, err := simCalibrated(context.Background(), exp, name, hooks, cal)
	if err != nil {
		t.Fatal(err)
	}
	st := &m.Strategy
	slices.SortStableFunc(rs, func(a, b simResult) int { return int(a.SentAt - b.SentAt) })
	runtest.CheckAccounting(t, *st)
	if got, want := st.Requests, int64(len(rs)); got != want {
		t.Fatalf("summary counts %d requests, %d results reported", got, want)
	}
	return st, rs
}

func TestCalibratedFaultActions(t *testing.T) {
	const over = 400 * time.Microsecond
	tests := []struct {
		name    string
		fault   string
		latency time.Duration
		status  int
		err     bool
		timeout bool
	}{
		{"a fail's answer comes after its delay and the overhead", "{mode: fail, status: 502, delay: 1ms}", time.Millisecond + over, 502, false, false},
		{"a reset comes back after the overhead", "{mode: reset}", over, 0, true, false},
		{"hang still times out at the timeout", "{mode: hang}", 250 * time.Millisecond, 0, true, true},
		{"a service ends, then its answer comes back", "{mode: slow, latency: 7ms}", 7*time.Millisecond + over, 200, false, false},
		{"an answer coming back after the deadline is a timeout", "{mode: slow, latency: 249900us}", 250 * time.Millisecond, 0, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "action", `
duration: 1s
arrival: constant
rate: 50
timeout: 250ms
slow_threshold: 100ms
instances: {count: 1, workers: 0, service: {dist: fixed, value: 2ms}}
faults: [{instance: 0, at: 0s, fault: `+tt.fault+`}]
strategies: [p2c]
`)
			_, rs := traceCalibrated(t, exp, "p2c", fixedOverhead(0.4, 0.5))
			if len(rs) != 50 {
				t.Fatalf("%d requests, want 50", len(rs))
			}
			for k, r := range rs {
				if r.Latency != tt.latency || r.so.Latency != tt.latency || r.so.Status != tt.status ||
					(r.so.Err != nil) != tt.err || r.so.Timeout != tt.timeout {
					t.Fatalf("request %d: latency %v, status %d, err %v, timeout %v; want %v, %d, err %v, timeout %v",
						k, r.Latency, r.so.Status, r.so.Err, r.so.Timeout, tt.latency, tt.status, tt.err, tt.timeout)
				}
			}
		})
	}
}

func TestCalibratedOverheadHoldsTheWorkerOnlyForService(t *testing.T) {
	// One worker, 10 ms service, arrivals every 5 ms, 1 ms overhead split
	// 0.3/0.7: request k reaches the instance at Due(k)+0.3 ms, starts when
	// k-1 ends, ends at 0.3 ms + (k+1)*10 ms, and its answer is back 0.7 ms
	// later. The overhead queues nothing.
	exp := runtest.MustExperiment(t, "queue", `
duration: 100ms
arrival: constant
rate: 200
instances: {count: 1, workers: 1, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`)
	_, rs := traceCalibrated(t, exp, "round-robin", fixedOverhead(1, 0.3))
	if len(rs) != 20 {
		t.Fatalf("%d requests, want 20", len(rs))
	}
	for k, r := range rs {
		want := 300*time.Microsecond + time.Duration(k+1)*10*time.Millisecond + 700*time.Microsecond - due(200, k)
		if r.Latency != want || r.so.Status != 200 {
			t.Errorf("request %d: latency %v, status %d; want %v, 200", k, r.Latency, r.so.Status, want)
		}
	}
}

func TestCalibratedTimeoutsOutOfOrder(t *testing.T) {
	// Overheads from 0 to 5 ms let requests reach an overloaded instance's
	// queue out of their arrival order; each still times out once.
	exp := runtest.MustExperiment(t, "overload", `
duration: 2s
arrival: poisson
rate: 400
timeout: 100ms
instances: {count: 2, workers: 1, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`)
	cal := &Calibration{From: "test", PreShare: 0.8, Default: &reports.Overhead{Count: 1, Quantiles: []float64{0, 5}}}
	st, _ := traceCalibrated(t, exp, "round-robin", cal)
	if st.TimeoutRatio < 0.5 {
		t.Errorf("timeout ratio %v, want most requests to time out", st.TimeoutRatio)
	}
}

func TestCalibratedIsDeterministicAndLeavesUncalibratedAlone(t *testing.T) {
	base, err := experiments.Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := base.Apply(experiments.Overrides{Duration: 2 * time.Second, Strategies: []string{"round-robin", "least-inflight"}})
	if err != nil {
		t.Fatal(err)
	}
	cal := &Calibration{From: "test", PreShare: 0.5, Default: &reports.Overhead{Count: 1, P1: 0.1, P10: 0.2, P50: 0.4, P90: 0.8, P99: 2, P999: 4, Max: 10}}
	run := func(e Engine) *reports.Summary {
		t.Helper()
		sum, err := harness.Run(context.Background(), exp, harness.Options{Engine: e})
		var failed *harness.ExpectationsFailed
		if err != nil && !errors.As(err, &failed) {
			t.Fatal(err)
		}
		return sum
	}
	plain := summaryJSON(t, run(Engine{}))
	a, b := summaryJSON(t, run(Engine{Calibration: cal})), summaryJSON(t, run(Engine{Calibration: cal}))
	if a != b {
		t.Fatal("two calibrated runs of the same experiment differ")
	}
	if a == plain {
		t.Fatal("the calibrated run is the uncalibrated one")
	}
	if again := summaryJSON(t, run(Engine{})); again != plain {
		t.Fatal("an uncalibrated run after a calibrated one differs")
	}
	// The longer in flight time of a 1 ms failure makes least-inflight
	// send the failing instance less.
	sum := run(Engine{Calibration: cal})
	plainSum := run(Engine{})
	if got, was := sum.Strategies[1].FaultyShare, plainSum.Strategies[1].FaultyShare; !(got < was) {
		t.Errorf("least-inflight's faulty share calibrated %v, uncalibrated %v; want less", got, was)
	}
}

func TestQuantileFunc(t *testing.T) {
	q, err := newQuantileFunc(&reports.Overhead{P1: 1, P10: 2, P50: 3, P90: 4, P99: 5, P999: 6, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, tt := range []struct {
		u    float64
		want time.Duration
	}{{0, ms(1)}, {0.005, ms(1)}, {0.1, ms(2)}, {0.3, ms(2.5)}, {0.5, ms(3)}, {0.9995, ms(8)}, {1, ms(10)}} {
		if got := q.at(tt.u); got != tt.want {
			t.Errorf("at(%v) = %v, want %v", tt.u, got, tt.want)
		}
	}
	q, err = newQuantileFunc(&reports.Overhead{P50: 99, Quantiles: []float64{0, 1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.at(0.75); got != ms(2) {
		t.Errorf("with quantiles, at(0.75) = %v, want 2ms", got)
	}
}

func TestLoadCalibration(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, body, err string
		pre             float64
	}{
		{"doc.json", `{"schema": "lbchaos-calibration/1", "pre_share": 0.25, "transport_overhead_ms": {"p1": 0.1, "p10": 0.2, "p50": 0.3, "p90": 0.5, "p99": 1, "p999": 2, "max": 3}}`, "", 0.25},
		{"default-pre.json", `{"schema": "lbchaos-calibration/1", "strategies": {"p2c": {"quantiles": [0.1, 0.4]}}}`, "", DefaultPreShare},
		{"bad-pre.json", `{"schema": "lbchaos-calibration/1", "pre_share": 2, "transport_overhead_ms": {"max": 1}}`, "pre_share", 0},
		{"none.json", `{"schema": "lbchaos-calibration/1"}`, "no distribution", 0},
		{"decreasing.json", `{"schema": "lbchaos-calibration/1", "strategies": {"p2c": {"quantiles": [0.4, 0.1]}}}`, "must not decrease", 0},
		{"unknown.json", `{"schema": "lbchaos-calibration/1", "mean": 1}`, "unknown field", 0},
		{"other.json", `{"schema": "something/else"}`, "neither", 0},
		{"sim-summary.json", `{"schema": "` + reports.Schema + `", "engine": "sim", "strategies": [{"name": "p2c"}]}`, "no strategy has transport_overhead_ms", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadCalibration(write(tt.name, tt.body))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PreShare != tt.pre {
				t.Errorf("pre share %v, want %v", c.PreShare, tt.pre)
			}
		})
	}

	// A real run's directory: per strategy, and pooled for the others.
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := &reports.Summary{Engine: "real", Strategies: []reports.Strategy{
		{Name: "a", TransportOverheadMs: &reports.Overhead{Count: 1, P1: 1, P10: 1, P50: 1, P90: 1, P99: 1, P999: 1, Max: 1}},
		{Name: "b", TransportOverheadMs: &reports.Overhead{Count: 3, P1: 3, P10: 3, P50: 3, P90: 3, P99: 3, P999: 3, Max: 3}},
	}}
	if err := reports.WriteAll(run, sum); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCalibration(run)
	if err != nil {
		t.Fatal(err)
	}
	if c.Real == nil || c.From != run || c.distribution("a").P50 != 1 || c.distribution("other").P50 != 2.5 {
		t.Errorf("from %q, real %v, a's p50 %v, pooled p50 %v", c.From, c.Real != nil, c.distribution("a").P50, c.distribution("other").P50)
	}
}

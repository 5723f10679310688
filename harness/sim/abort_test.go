package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
)

// TestSimAbortTrips: each condition trips at the end of the first slice
// of its window at which the window's results pass the threshold, in
// virtual time; the attack stops there, and no request is sent after.
func TestSimAbortTrips(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   string
		at     float64 // when it trips, s
		metric string
		value  float64
	}{
		{"every request fails", `
duration: 6s
rate: 400
arrival: constant
instances: {count: 4, service: {dist: fixed, value: 5ms}}
faults: [{instances: [0, 1, 2, 3], at: 0s, fault: {mode: fail, status: 503}}]
abort: [{error_ratio: "> 50%", window: 2s}]
`, 2, "error_ratio", 1},
		{"errors from 1 s", `
duration: 6s
rate: 400
arrival: constant
instances: {count: 4, service: {dist: fixed, value: 5ms}}
faults: [{instances: [0, 1, 2, 3], at: 1s, fault: {mode: fail, status: 503}}]
abort: [{error_ratio: "> 0.72", window: 2s}]
`, 2.5, "error_ratio", 0.75},
		{"timeouts", `
duration: 6s
rate: 200
timeout: 500ms
instances: {count: 2, service: {dist: fixed, value: 5ms}}
faults: [{instances: [0, 1], at: 0s, fault: {mode: hang}}]
abort: [{error_ratio: "> 0.99", window: 2s}, {timeout_ratio: "> 0.5", window: 1s}]
`, 1, "timeout_ratio", 1},
		{"p99 latency", `
duration: 6s
rate: 200
instances: {count: 2, workers: 0, service: {dist: fixed, value: 5ms}}
faults: [{instances: [0, 1], at: 3s, fault: {mode: slow, factor: 40}}]
abort: [{p99_ms: "> 100", window: 1s}]
`, 3.25, "p99_ms", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "abort", tc.body+"strategies: [round-robin]\n")
			var last time.Duration
			hooks := simHooks{result: func(o engine.Outcome, _ strategies.Outcome) { last = max(last, o.SentAt) }}
			m, err := simStrategy(context.Background(), exp, "round-robin", hooks)
			if err != nil {
				t.Fatal(err)
			}
			a := m.Abort
			if a == nil {
				t.Fatalf("no abort; strategy %+v", m.Strategy)
			}
			if a.AtS != tc.at || a.Metric != tc.metric || math.Abs(a.Value-tc.value) > 0.01*tc.value {
				t.Errorf("tripped %s = %v at %v s, want %s = %v at %v s", a.Metric, a.Value, a.AtS, tc.metric, tc.value, tc.at)
			}
			if !m.Interrupted || m.Elapsed != time.Duration(tc.at*float64(time.Second)) {
				t.Errorf("interrupted %v after %v, want interrupted at %v s", m.Interrupted, m.Elapsed, tc.at)
			}
			if last >= m.Elapsed {
				t.Errorf("a request was sent at %v, after the abort at %v", last, m.Elapsed)
			}
		})
	}
}

// TestSimAbortIsRepeatable: the same experiment trips at the same
// instant with the same numbers.
func TestSimAbortIsRepeatable(t *testing.T) {
	exp := runtest.MustExperiment(t, "abort", `
seed: 7
duration: 10s
rate: 1000
instances: {count: 5, service: {dist: exponential, mean: 10ms}}
faults: [{instances: [0, 1, 2], at: 2s, fault: {mode: error-rate, p: 0.8, status: 500}}]
strategies: [p2c]
abort: [{bad_ratio: "> 0.3", window: 3s}, {p999_ms: "> 500", window: 1s}]
`)
	run := func() *engine.Measurement {
		m, err := simStrategy(context.Background(), exp, "p2c", simHooks{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := run(), run()
	if a.Abort == nil {
		t.Fatal("no abort")
	}
	if d := cmp.Diff(a.Abort, b.Abort); d != "" {
		t.Errorf("two runs differ (-first +second):\n%s", d)
	}
	if a.Strategy.Requests != b.Strategy.Requests {
		t.Errorf("requests %d and %d", a.Strategy.Requests, b.Strategy.Requests)
	}
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// metricSample has a distinct value for every metric.
var metricSample = reports.Strategy{
	Name: "s", Requests: 1000, AchievedRate: 99.5, SuccessRatio: 0.625, ErrorRatio: 0.375, TimeoutRatio: 0.0625, SlowRatio: 0.125,
	FaultyShare: 0.25, Ejections: 4,
	LatencyMs: reports.Latency{Mean: 12, P50: 10, P90: 11, P99: 20, P999: 40, Max: 90},
}

func TestCheckExpectations(t *testing.T) {
	counted := reports.Strategy{Name: "counted", DuplicateExecutions: new(int64(3))}
	sum := &reports.Summary{Strategies: []reports.Strategy{metricSample, counted}}
	tests := []struct {
		name    string
		x       experiments.Expectation
		got     float64
		passed  bool
		missing bool
	}{
		{"less passes", expect("s", "error_ratio", "<", 0.38), 0.375, true, false},
		{"less fails at the bound", expect("s", "error_ratio", "<", 0.375), 0.375, false, false},
		{"at most passes at the bound", expect("s", "error_ratio", "<=", 0.375), 0.375, true, false},
		{"at most fails", expect("s", "p99_ms", "<=", 19.9), 20, false, false},
		{"more passes", expect("s", "p99_ms", ">", 19.9), 20, true, false},
		{"more fails at the bound", expect("s", "p99_ms", ">", 20), 20, false, false},
		{"at least passes at the bound", expect("s", "ejections", ">=", 4), 4, true, false},
		{"at least fails", expect("s", "ejections", ">=", 5), 4, false, false},
		{"derived metric", expect("s", "bad_ratio", "<", 0.5), 0.4375, true, false},
		{"strategy not run", expect("p2c", "error_ratio", "<", 1), 0, false, true},
		{"unknown metric", expect("s", "p95_ms", "<", 1000), 0, false, false},
		// duplicate_executions only the real engine's instances count: a
		// run without it (a simulation) neither passes nor fails.
		{"metric not measured", expect("s", "duplicate_executions", "<=", 0), 0, false, true},
		{"measured count fails", expect("counted", "duplicate_executions", "<=", 0), 3, false, false},
		{"measured count passes", expect("counted", "duplicate_executions", ">", 2), 3, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := &experiments.Experiment{Expect: []experiments.Expectation{tt.x}}
			results, failed := CheckExpectations(exp, sum)
			want := []reports.ExpectationResult{{
				Strategy: tt.x.Strategy, Metric: tt.x.Metric, Op: tt.x.Op, Want: tt.x.Value,
				Got: tt.got, Passed: tt.passed, Missing: tt.missing,
			}}
			if d := cmp.Diff(want, results); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
			if wantFailed := btoi(!tt.passed && !tt.missing); failed != wantFailed {
				t.Errorf("failed = %d, want %d", failed, wantFailed)
			}
		})
	}
}

func expect(strategy, metric, op string, value float64) experiments.Expectation {
	return experiments.Expectation{Strategy: strategy, Metric: metric, Op: op, Value: value}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCheckExpectationsKeepsOrderAndCounts(t *testing.T) {
	sum := &reports.Summary{Strategies: []reports.Strategy{metricSample}}
	exp := &experiments.Experiment{Expect: []experiments.Expectation{
		expect("s", "error_ratio", "<", 0.1),  // fails
		expect("x", "error_ratio", "<", 0.1),  // missing
		expect("s", "error_ratio", ">", 0.1),  // passes
		expect("s", "requests", "<", 10),      // fails
		expect("s", "achieved_rate", ">", 99), // passes
	}}
	results, failed := CheckExpectations(exp, sum)
	var marks []string
	for _, r := range results {
		marks = append(marks, fmt.Sprintf("%s %s %v/%v", r.Strategy, r.Metric, r.Passed, r.Missing))
	}
	want := []string{"s error_ratio false/false", "x error_ratio false/true", "s error_ratio true/false", "s requests false/false", "s achieved_rate true/false"}
	if d := cmp.Diff(want, marks); d != "" || failed != 2 {
		t.Errorf("failed = %d, results (-want +got):\n%s", failed, d)
	}
	if results, failed := CheckExpectations(&experiments.Experiment{}, sum); results != nil || failed != 0 {
		t.Errorf("no expectations: %v, %d", results, failed)
	}
}

// simChecked runs exp in simulation through the driver and returns its
// expectations as checked there, and how many failed.
func simChecked(t *testing.T, exp *experiments.Experiment) ([]reports.ExpectationResult, int) {
	t.Helper()
	sum, err := Run(context.Background(), exp, Options{Engine: sim.Engine{}})
	var ef *ExpectationsFailed
	if err != nil && !errors.As(err, &ef) {
		t.Fatal(err)
	}
	failed := 0
	if ef != nil {
		failed = ef.Failed
	}
	return sum.Expectations, failed
}

// A wrong expectation fails a real check: fast-fail's round robin sends a
// tenth of its requests to the failing instance.
func TestWrongExpectationFailsInSim(t *testing.T) {
	full, err := experiments.Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := full.Apply(experiments.Overrides{Strategies: []string{"round-robin"}})
	if err != nil {
		t.Fatal(err)
	}
	wrong := experiments.Expectation{Strategy: "round-robin", Metric: "error_ratio", Op: "<", Value: 0.01}
	exp.Expect = append(slices.Clone(exp.Expect), wrong)
	results, failed := simChecked(t, exp)
	if failed != 1 {
		t.Fatalf("failed = %d, want 1:\n%s", failed, expectationLines(t, results))
	}
	last := results[len(results)-1]
	if last.Passed || last.Missing || last.Got < 0.09 || last.Got > 0.11 {
		t.Errorf("the wrong expectation: %+v", last)
	}
	var missing int
	for _, r := range results {
		if r.Missing {
			missing++
			if r.Strategy == "round-robin" {
				t.Errorf("round-robin reported missing: %+v", r)
			}
		}
	}
	if missing == 0 {
		t.Error("no expectation on a strategy left out is reported missing")
	}
}

// Every shipped experiment's expectations hold in simulation at full
// length, as CI checks them.
func TestShippedExpectationsHoldInSim(t *testing.T) {
	for _, name := range experiments.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			exp, err := experiments.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if !sim.Measures(exp) {
				t.Skipf("%s runs only with the real engine", name)
			}
			results, failed := simChecked(t, exp)
			for _, r := range results {
				// A real proxy and grpc-go's balancers are left out of a
				// simulation, and a metric only real instances count is
				// not measured; nothing else is missing.
				unobservable := reports.Unobserved(&reports.Strategy{}, r.Metric)
				if r.Missing && !proxyspec.IsProxy(r.Strategy) && !strategies.IsGRPC(r.Strategy) && !unobservable {
					t.Errorf("%s %s: strategy missing from the run", r.Strategy, r.Metric)
				}
			}
			if failed != 0 || t.Failed() {
				t.Errorf("%d failed:\n%s", failed, expectationLines(t, results))
			}
		})
	}
}

func expectationLines(t *testing.T, results []reports.ExpectationResult) string {
	var b strings.Builder
	if err := reports.WriteExpectations(&b, results); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

package reports

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteComparisonGolden(t *testing.T) {
	a := sampleSummary()
	b := sampleSummary()
	b.Engine, b.Backends = "sim", "sim"
	b.Strategies[0].ErrorRatio += 0.01
	b.Strategies[0].LatencyMs.P99 *= 2
	b.Strategies = b.Strategies[:len(b.Strategies)-1] // one strategy only in A
	var buf bytes.Buffer
	if err := WriteComparison(&buf, a, b); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare.golden", buf.Bytes())
	out := buf.String()
	if !strings.Contains(out, "+1.00 pp") || !strings.Contains(out, "+100.0%") {
		t.Errorf("differences missing:\n%s", out)
	}
	if !strings.Contains(out, "—") {
		t.Errorf("a strategy missing from B is not marked:\n%s", out)
	}
}

// regressionRuns are two runs of three strategies: B is worse than A in
// some metrics beyond DefaultTolerance, worse within it in others, better
// in others; one strategy is only in A, one only in B.
func regressionRuns() (a, b *Summary) {
	st := func(name string, rate, errs, timeouts, slow, faulty, p99, p999 float64) Strategy {
		return Strategy{Name: name, Requests: int64(30 * rate), AchievedRate: rate, ErrorRatio: errs, SuccessRatio: 1 - errs,
			TimeoutRatio: timeouts, SlowRatio: slow, FaultyShare: faulty, LatencyMs: Latency{P50: 10, P99: p99, P999: p999}}
	}
	started := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	a = &Summary{Experiment: "fast-fail", Engine: "sim", Backends: "sim", Seed: 1, Started: started, DurationS: 30, TargetRate: 4000,
		Strategies: []Strategy{
			st("round-robin", 4000, 0.1, 0, 0, 0.1, 11.3, 12.5),
			st("least-inflight", 3712, 0.45, 0, 0, 0.45, 11.3, 12.5),
			st("least-inflight+eject(consecutive=5,duration=5s)", 4000, 0.0004, 0, 0, 0.0004, 11.3, 12.5),
		}}
	b = &Summary{Experiment: "fast-fail", Engine: "real", Backends: "process", Seed: 1, Started: started.Add(time.Hour), DurationS: 30, TargetRate: 4000,
		Strategies: []Strategy{
			// error ratio +3 pp and +30%: a regression; faulty share
			// +15% but only +1.5 pp; p99 +33% but only +3.7 ms; p99.9
			// +17.5 ms and +140%: a regression.
			st("round-robin", 4000, 0.13, 0, 0, 0.115, 15, 30),
			// achieved rate −5.7%; slow ratio from none to 2%; error
			// ratio +3 pp but +6.7%; timeouts +0.5 pp.
			st("least-inflight", 3500, 0.48, 0.005, 0.02, 0.40, 9, 12.5),
			st("p2c", 4000, 0.19, 0, 0, 0.19, 11, 12),
		}}
	return a, b
}

func TestWriteRegressionsGolden(t *testing.T) {
	a, b := regressionRuns()
	var buf bytes.Buffer
	n, err := WriteRegressions(&buf, a, b, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare_regressions.golden", buf.Bytes())
	if n != 4 {
		t.Errorf("%d regressions, want 4:\n%s", n, buf.String())
	}
	if got := strings.Count(buf.String(), "\nREGRESSION"); got != n {
		t.Errorf("%d REGRESSION lines for %d regressions", got, n)
	}

	buf.Reset()
	n, err = WriteRegressions(&buf, b, b, DefaultTolerance)
	if err != nil || n != 0 || !strings.HasSuffix(buf.String(), "\nnone\n") {
		t.Errorf("a run against itself: %d regressions, err %v:\n%s", n, err, buf.String())
	}
}

func TestRegressionBounds(t *testing.T) {
	tol := DefaultTolerance
	tests := []struct {
		name   string
		metric string
		a, b   float64
		want   bool
	}{
		{"ratio from zero by 1 pp", "error_ratio", 0, 0.01, false},
		{"ratio from zero beyond 1 pp", "error_ratio", 0, 0.0101, true},
		{"ratio +2 pp is +20%", "timeout_ratio", 0.1, 0.12, false},
		{"ratio +2.1 pp is +21%", "timeout_ratio", 0.1, 0.121, true},
		{"ratio +10 pp is +11%", "faulty_share", 0.9, 1, false},
		{"ratio falls", "slow_ratio", 0.5, 0, false},
		{"latency +5 ms", "p99_ms", 10, 15, false},
		{"latency +5.1 ms and +51%", "p99_ms", 10, 15.1, true},
		{"latency +100 ms is +10%", "p999_ms", 1000, 1100, false},
		{"latency +201 ms and +20.1%", "p999_ms", 1000, 1201, true},
		{"latency falls", "p99_ms", 1000, 10, false},
		{"rate −5%", "achieved_rate", 4000, 3800, false},
		{"rate −5.1%", "achieved_rate", 4000, 3796, true},
		{"rate rises", "achieved_rate", 4000, 5000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Contains(regressionChecked, tt.metric) {
				t.Fatalf("no check on %s", tt.metric)
			}
			m, _ := LookupMetric(tt.metric)
			if got := tol.beyond(m, tt.a, tt.b); got != tt.want {
				t.Errorf("%v → %v: regression %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestWriteExpectationsGolden(t *testing.T) {
	results := []ExpectationResult{
		{Strategy: "round-robin", Metric: "error_ratio", Op: ">", Want: 0.07, Got: 0.1000341, Passed: true},
		{Strategy: "round-robin", Metric: "error_ratio", Op: "<", Want: 0.01, Got: 0.1000341},
		{Strategy: "least-inflight+eject(consecutive=5,duration=5s)", Metric: "ejections", Op: ">=", Want: 3, Got: 6, Passed: true},
		{Strategy: "p2c", Metric: "p99_ms", Op: "<=", Want: 500, Got: 30015.5},
		{Strategy: "random", Metric: "slow_ratio", Op: "<", Want: 0.005, Missing: true},
		{Strategy: "least-inflight", Metric: "bad_ratio", Op: "<", Want: 0.005, Got: 0.00034312, Passed: true},
	}
	var buf bytes.Buffer
	if err := WriteExpectations(&buf, results); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare_expectations.golden", buf.Bytes())
	if got := strings.Count(buf.String(), "FAILED"); got != 2 {
		t.Errorf("%d FAILED lines, want 2:\n%s", got, buf.String())
	}

	buf.Reset()
	if err := WriteExpectations(&buf, nil); err != nil || buf.Len() != 0 {
		t.Errorf("no expectations: %q, %v", buf.String(), err)
	}
}

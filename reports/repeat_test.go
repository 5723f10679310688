package reports

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewSpread(t *testing.T) {
	for _, tc := range []struct {
		name             string
		values           []float64
		median, min, max float64
	}{
		{"one", []float64{4}, 4, 4, 4},
		{"odd, unordered", []float64{3, 1, 2}, 2, 1, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, 4},
		{"ties", []float64{5, 5, 1}, 5, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := NewSpread(tc.values)
			if sp.Median != tc.median || sp.Min != tc.min || sp.Max != tc.max {
				t.Errorf("median %g min %g max %g, want %g %g %g", sp.Median, sp.Min, sp.Max, tc.median, tc.min, tc.max)
			}
			if diff := cmp.Diff(tc.values, sp.Values); diff != "" {
				t.Errorf("values not kept in order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSignificant(t *testing.T) {
	errRatio, _ := LookupMetric("error_ratio")
	p99, _ := LookupMetric("p99_ms")
	rate, _ := LookupMetric("achieved_rate")
	ejections, _ := LookupMetric("ejections")
	s := func(v ...float64) Spread { return NewSpread(v) }
	for _, tc := range []struct {
		name string
		m    Metric
		a, b Spread
		want Significance
	}{
		{"identical", errRatio, s(0.10, 0.11, 0.12), s(0.10, 0.11, 0.12), WithinNoise},
		{"medians far apart, ranges overlap: noise", errRatio, s(0.02, 0.03, 0.30), s(0.25, 0.31, 0.33), WithinNoise},
		{"ranges apart, beyond the tolerance", errRatio, s(0.10, 0.11, 0.12), s(0.15, 0.16, 0.17), Worse},
		{"ranges touch: noise", errRatio, s(0.10, 0.11, 0.15), s(0.15, 0.16, 0.17), WithinNoise},
		{"ranges apart, within the tolerance", errRatio, s(0.100, 0.101, 0.102), s(0.104, 0.105, 0.106), WithinNoise},
		{"ranges apart, better", errRatio, s(0.15, 0.16, 0.17), s(0.10, 0.11, 0.12), Better},
		{"latency up beyond 5 ms and 20%", p99, s(10, 11, 12), s(20, 21, 22), Worse},
		{"rate is higher-is-better: a fall is worse", rate, s(4000, 3990, 4010), s(3500, 3510, 3490), Worse},
		{"rate up is better", rate, s(3500, 3510, 3490), s(4000, 3990, 4010), Better},
		{"neutral metric", ejections, s(1, 2, 3), s(10, 11, 12), Unranked},
		{"single runs: the tolerance alone", errRatio, s(0.10), s(0.13), Worse},
		{"single runs within the tolerance", errRatio, s(0.10), s(0.105), WithinNoise},
		{"a side without values", errRatio, s(), s(0.5), Unranked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Significant(tc.m, tc.a, tc.b, DefaultTolerance); got != tc.want {
				t.Errorf("Significant(%s, %v, %v) = %v, want %v", tc.m.Name, tc.a.Values, tc.b.Values, got, tc.want)
			}
		})
	}
}

// repeatedRuns are three repetitions of regressionRuns' A, the error ratio
// of round-robin and the expectation's got varying by seed.
func repeatedRuns() []*Summary {
	var runs []*Summary
	for i, e := range []float64{0.12, 0.10, 0.11} {
		s, _ := regressionRuns()
		s.Seed = uint64(1 + i)
		s.Strategies[0].ErrorRatio = e
		s.Expectations = []ExpectationResult{
			{Strategy: "round-robin", Metric: "error_ratio", Op: "<", Want: 0.115, Got: e, Passed: e < 0.115},
			{Strategy: "p2c", Metric: "error_ratio", Op: "<", Want: 0.2, Missing: true},
		}
		runs = append(runs, s)
	}
	return runs
}

func TestAggregate(t *testing.T) {
	agg, err := Aggregate(repeatedRuns(), []string{"rep-1", "rep-2", "rep-3"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3}, agg.Seeds); diff != "" {
		t.Errorf("seeds (-want +got):\n%s", diff)
	}
	rr, ok := agg.strategy("round-robin")
	if !ok {
		t.Fatal("round-robin missing")
	}
	want := Spread{Values: []float64{0.12, 0.10, 0.11}, Median: 0.11, Min: 0.10, Max: 0.12}
	if diff := cmp.Diff(want, rr.Metrics["error_ratio"]); diff != "" {
		t.Errorf("error_ratio (-want +got):\n%s", diff)
	}
	// Two of three repetitions failed the expectation on their own; the
	// median (0.11) passes it.
	wantExp := []ExpectationResult{
		{Strategy: "round-robin", Metric: "error_ratio", Op: "<", Want: 0.115, Got: 0.11, Passed: true},
		{Strategy: "p2c", Metric: "error_ratio", Op: "<", Want: 0.2, Missing: true},
	}
	if diff := cmp.Diff(wantExp, agg.Expectations); diff != "" {
		t.Errorf("expectations on the medians (-want +got):\n%s", diff)
	}

	other := repeatedRuns()
	other[2].Engine = "real"
	if _, err := Aggregate(other, []string{"rep-1", "rep-2", "rep-3"}); err == nil || !strings.Contains(err.Error(), "rep-3") {
		t.Errorf("runs of different engines aggregated: %v", err)
	}
}

func TestRepeatedJSONRoundTrip(t *testing.T) {
	agg, err := Aggregate(repeatedRuns(), []string{"rep-1", "rep-2", "rep-3"})
	if err != nil {
		t.Fatal(err)
	}
	agg.Advisory = true
	var buf bytes.Buffer
	if err := WriteRepeatedJSON(&buf, agg); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRepeatedJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agg, back); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}
	if _, err := ReadRepeatedJSON(strings.NewReader(`{"schema": "lbchaos/summary/v1"}`)); err == nil {
		t.Error("a summary.json read as repeats.json")
	}
}

func TestRepeatedSkipsUnmeasuredMetrics(t *testing.T) {
	runs := repeatedRuns()
	runs[1].Strategies[0].LatencyMs.P99 = math.NaN()
	agg, err := Aggregate(runs, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	rr, _ := agg.strategy("round-robin")
	if _, ok := rr.Metrics["p99_ms"]; ok {
		t.Error("a metric one repetition did not measure has a spread")
	}
	var buf bytes.Buffer
	if err := WriteRepeatedJSON(&buf, agg); err != nil {
		t.Fatalf("not writable as JSON: %v", err)
	}
}

func TestWriteGate(t *testing.T) {
	base, err := Aggregate(repeatedRuns(), []string{"rep-1", "rep-2", "rep-3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("equal", func(t *testing.T) {
		var buf bytes.Buffer
		n, missing, err := WriteGate(&buf, base, base, DefaultTolerance)
		if err != nil || n != 0 || missing != 0 || !strings.HasSuffix(buf.String(), "none\n") {
			t.Errorf("%d regressions, %d missing, %v:\n%s", n, missing, err, buf.String())
		}
	})
	t.Run("worse beyond the noise, and a strategy missing", func(t *testing.T) {
		runs := repeatedRuns()
		for _, s := range runs {
			s.Strategies[0].ErrorRatio += 0.2
			s.Strategies = s.Strategies[:2] // the ejecting strategy is gone
		}
		worse, err := Aggregate(runs, []string{"rep-1", "rep-2", "rep-3"})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, missing, err := WriteGate(&buf, base, worse, DefaultTolerance)
		out := buf.String()
		if err != nil || n != 1 || missing != 1 {
			t.Fatalf("%d regressions, %d missing, %v:\n%s", n, missing, err, out)
		}
		if !regexp.MustCompile(`(?m)^REGRESSION\s+fast-fail\s+round-robin\s+error_ratio\s+11\.00% \(10\.00–12\.00%\) → 31\.00% \(30\.00–32\.00%\)\s+\+20\.00 pp`).MatchString(out) {
			t.Errorf("regression line:\n%s", out)
		}
		if !regexp.MustCompile(`(?m)^MISSING\s+fast-fail\s+least-inflight\+eject\(consecutive=5,duration=5s\)\s+in A, not in B`).MatchString(out) {
			t.Errorf("missing line:\n%s", out)
		}
	})
	t.Run("worse within the noise", func(t *testing.T) {
		runs := repeatedRuns()
		// Two repetitions much worse, one as good as the best before: the
		// median moved by 20 pp, but the ranges overlap.
		runs[0].Strategies[0].ErrorRatio = 0.31
		runs[1].Strategies[0].ErrorRatio = 0.10
		runs[2].Strategies[0].ErrorRatio = 0.32
		noisy, err := Aggregate(runs, []string{"rep-1", "rep-2", "rep-3"})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, _, err := WriteGate(&buf, base, noisy, DefaultTolerance)
		if err != nil || n != 0 {
			t.Errorf("%d regressions, %v:\n%s", n, err, buf.String())
		}
		buf.Reset()
		if err := WriteRepeatedComparison(&buf, base, noisy, DefaultTolerance); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`error_ratio\s+11\.00% \(10\.00–12\.00%\)\s+31\.00% \(10\.00–32\.00%\)\s+\+20\.00 pp\s+\+181\.8%\s+~`).MatchString(buf.String()) {
			t.Errorf("comparison does not show the change as noise:\n%s", buf.String())
		}
	})
}

func TestWriteRepeatedMarkdown(t *testing.T) {
	agg, err := Aggregate(repeatedRuns(), []string{"rep-1", "rep-2", "rep-3"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteRepeatedMarkdown(&buf, agg); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# fast-fail: 3 repetitions",
		"| round-robin | ",
		" 11.00 (10.00–12.00) |",
		"expectations: 1 passed, 0 failed, 1 missing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

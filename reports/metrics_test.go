package reports

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBadRatio(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		errors, slow, timeout float64
		want                  float64
	}{
		{"nothing bad", 0, 0, 0, 0},
		{"fast failures", 0.1, 0, 0, 0.1},
		{"slow successes", 0, 0.1, 0, 0.1},
		{"timeouts only", 0.05, 0.05, 0.05, 0.05},
		{"failures, slow successes and timeouts", 0.1, 0.05, 0.02, 0.13},
		{"timeout shorter than the slow threshold", 0.1, 0, 0.1, 0.1},
		{"everything", 1, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &Strategy{ErrorRatio: tc.errors, SlowRatio: tc.slow, TimeoutRatio: tc.timeout}
			got, ok := MetricValue(st, "")
			if !ok || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("bad_ratio = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}

func TestMetricValue(t *testing.T) {
	st := &Strategy{ErrorRatio: 0.1, SlowRatio: 0.2, TimeoutRatio: 0.05, FaultyShare: 0.3, LatencyMs: Latency{P99: 12, P999: 40}}
	want := map[string]float64{"bad_ratio": 0.25, "error_ratio": 0.1, "slow_ratio": 0.2, "timeout_ratio": 0.05, "faulty_share": 0.3, "p99_ms": 12, "p999_ms": 40}
	for _, name := range KeyMetrics() {
		got, ok := MetricValue(st, name)
		if !ok || math.Abs(got-want[name]) > 1e-12 {
			t.Errorf("MetricValue(%q) = %v, %v; want %v", name, got, ok, want[name])
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("KeyMetrics lacks %v", want)
	}
	if _, ok := MetricValue(st, "requests"); ok {
		t.Error("MetricValue knows an undocumented metric")
	}
}

func TestVerdictOf(t *testing.T) {
	strat := func(name string, errs float64, req int64) Strategy {
		return Strategy{Name: name, ErrorRatio: errs, Requests: req}
	}
	for _, tc := range []struct {
		name    string
		s       *Summary
		ranking []string
		sayings string
	}{
		{"ranked, ties keep order", &Summary{KeyMetric: "error_ratio", Strategies: []Strategy{
			strat("rr", 0.1, 5), strat("li", 0.45, 5), strat("eject", 0.0004, 5), strat("random", 0.1, 5)}},
			[]string{"eject", "rr", "random", "li"},
			"Best on failed requests: eject (0.04%). Worst: li (45.00%), 44.96 percentage points higher, 1125× the best."},
		{"best has none", &Summary{KeyMetric: "error_ratio", Strategies: []Strategy{strat("a", 0, 5), strat("b", 0.5, 5)}},
			[]string{"a", "b"},
			"Best on failed requests: a (0.00%). Worst: b (50.00%), 50.00 percentage points higher; the best had none."},
		{"tiny difference", &Summary{KeyMetric: "error_ratio", Strategies: []Strategy{strat("a", 0.00001, 5), strat("b", 0.00002, 5)}},
			[]string{"a", "b"},
			"Best on failed requests: a (<0.01%). Worst: b (<0.01%), less than 0.01 percentage points higher, 2.0× the best."},
		{"latency", &Summary{KeyMetric: "p99_ms", Strategies: []Strategy{
			{Name: "a", Requests: 1, LatencyMs: Latency{P99: 2013}}, {Name: "b", Requests: 1, LatencyMs: Latency{P99: 10}}}},
			[]string{"b", "a"},
			"Best on p99 latency: b (10.0 ms). Worst: a (2013 ms), 2003 ms higher, 201× the best."},
		{"tie", &Summary{Strategies: []Strategy{strat("a", 0.1, 5), strat("b", 0.1, 5)}},
			[]string{"a", "b"}, "All 2 strategies tie on bad requests (failed or slow) at 10.00%."},
		{"one measured, others empty or NaN", &Summary{Strategies: []Strategy{strat("a", 0.1, 5), strat("b", 0, 0), strat("c", math.NaN(), 5)}},
			[]string{"a"}, "Only a was measured: bad requests (failed or slow) 10.00%."},
		{"none", &Summary{}, nil, "No strategy has a value for bad requests (failed or slow)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := VerdictOf(tc.s)
			var names []string
			for _, r := range v.Ranking {
				names = append(names, r.Strategy)
			}
			if d := cmp.Diff(tc.ranking, names); d != "" {
				t.Errorf("ranking (-want +got):\n%s", d)
			}
			if got := v.String(); got != tc.sayings {
				t.Errorf("String() =\n%q, want\n%q", got, tc.sayings)
			}
		})
	}
	v := VerdictOf(&Summary{KeyMetric: "nope"})
	if v.Metric != DefaultKeyMetric || v.Unknown != "nope" {
		t.Errorf("unknown key metric: Metric %q Unknown %q", v.Metric, v.Unknown)
	}
}

func TestValueOfEveryMetric(t *testing.T) {
	st := &Strategy{
		Name: "s", Requests: 1000, AchievedRate: 99.5, SuccessRatio: 0.625, ErrorRatio: 0.375, TimeoutRatio: 0.0625, SlowRatio: 0.125,
		FaultyShare: 0.25, Ejections: 4,
		LatencyMs:  Latency{Mean: 12, P50: 10, P90: 11, P99: 20, P999: 40, Max: 90},
		MaxAvgLoad: 1.5, Affinity: ptr(0.75), MaxJumpRps: 120, ShareStddev: 0.02, ErrorTailS: ptr(3.0),
		Instances: []Instance{{Utilization: ptr(0.5)}, {Utilization: ptr(0.875)}, {}},
	}
	want := map[string]float64{
		"max_avg_load": 1.5, "affinity": 0.75, "max_jump_rps": 120, "share_stddev": 0.02, "error_tail_s": 3, "max_utilization": 0.875,
		"bad_ratio": 0.4375, "error_ratio": 0.375, "success_ratio": 0.625, "timeout_ratio": 0.0625, "slow_ratio": 0.125,
		"faulty_share": 0.25, "p50_ms": 10, "p90_ms": 11, "p99_ms": 20, "p999_ms": 40, "max_ms": 90, "mean_ms": 12,
		"ejections": 4, "achieved_rate": 99.5, "requests": 1000,
	}
	for _, m := range Metrics() {
		got, ok := Value(st, m)
		if w, listed := want[m]; !ok || !listed || got != w {
			t.Errorf("Value(%s) = %v, %v; want %v (listed %v)", m, got, ok, w, listed)
		}
	}
	if len(want) != len(Metrics()) {
		t.Errorf("Metrics() has %d names, this test %d", len(Metrics()), len(want))
	}
	if _, ok := Value(st, "p95_ms"); ok {
		t.Error("unknown metric accepted")
	}
	for _, m := range KeyMetrics() {
		if _, ok := Value(st, m); !ok {
			t.Errorf("key metric %s has no value", m)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func TestUnmeasuredMetricsAreNaN(t *testing.T) {
	st := &Strategy{Instances: []Instance{{}, {}}}
	for _, m := range []string{"affinity", "error_tail_s", "max_utilization"} {
		if got, ok := Value(st, m); !ok || !math.IsNaN(got) {
			t.Errorf("Value(%s) of a run that did not measure it = %v, %v; want NaN, true", m, got, ok)
		}
	}
}

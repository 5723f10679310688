package reports

import (
	"math"
	"reflect"
	"slices"
	"strings"
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

// fill returns n buckets of v each.
func fill(n int, v int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestValueOfEveryMetric(t *testing.T) {
	st := &Strategy{
		Name: "s", Requests: 1000, AchievedRate: 99.5, SuccessRatio: 0.625, ErrorRatio: 0.375, TimeoutRatio: 0.0625, SlowRatio: 0.125,
		FaultyShare: 0.25, Ejections: 4,
		LatencyMs:   Latency{Mean: 12, P50: 10, P90: 11, P99: 20, P999: 40, Max: 90},
		LatencyOkMs: &Latency{P50: 14, P99: 25}, LatencyFailedMs: &Latency{P99: 2},
		MaxAvgLoad: 1.5, Affinity: ptr(0.75), MaxJumpRps: 120, ShareStddev: 0.02, ErrorTailS: ptr(3.0),
		Instances: []Instance{{ID: 0, Utilization: ptr(0.5), Share: 0.5}, {ID: 1, Utilization: ptr(0.875), Share: 0.3}, {ID: 2, Share: 0.2}},
		Events:    []Event{{TimeS: 1, Instance: 2, Kind: "join"}, {TimeS: 1, Instance: 1, Kind: "eject"}},
		// 30 one-second buckets: the last 10 offered 100 each, 40 answered.
		Timeline:            &Timeline{BucketS: 1, Offered: fill(30, 100), Attempts: fill(30, 250), Goodput: fill(30, 40)},
		AttemptsPerRequest:  &AttemptStats{Mean: 2.5, P99: 3, Max: 3},
		DuplicateExecutions: new(int64(7)),
		Tiers:               []Tier{{Name: "a", PerClientRequest: 3}, {Name: "b", PerClientRequest: 27}},
		Zones:               []ZoneStats{{Name: "a", Requests: 10, ErrorRatio: 0.1}, {Name: "b", Requests: 10, ErrorRatio: 0.5}, {Name: "c", ErrorRatio: 1}},
		CrossZoneShare:      new(0.3),
	}
	want := map[string]float64{
		"cross_zone_share": 0.3, "worst_zone_error_ratio": 0.5,
		"tier_amplification": 27, "attempts_per_request": 2.5, "end_goodput_ratio": 0.4, "duplicate_executions": 7,
		"max_avg_load": 1.5, "affinity": 0.75, "max_jump_rps": 120, "share_stddev": 0.02, "error_tail_s": 3, "max_utilization": 0.875,
		"newcomer_share": 0.2, "bad_ratio": 0.4375, "error_ratio": 0.375, "success_ratio": 0.625, "timeout_ratio": 0.0625, "slow_ratio": 0.125,
		"faulty_share": 0.25, "p50_ms": 10, "p90_ms": 11, "p99_ms": 20, "p999_ms": 40, "max_ms": 90, "mean_ms": 12,
		"ejections": 4, "achieved_rate": 99.5, "requests": 1000,
		"p50_ok_ms": 14, "p99_ok_ms": 25, "p99_failed_ms": 2,
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
	for _, m := range []string{"affinity", "error_tail_s", "max_utilization", "newcomer_share"} {
		if got, ok := Value(st, m); !ok || !math.IsNaN(got) {
			t.Errorf("Value(%s) of a run that did not measure it = %v, %v; want NaN, true", m, got, ok)
		}
	}
}

func TestMetricTable(t *testing.T) {
	table := MetricTable()
	var names []string
	for _, m := range table {
		names = append(names, m.Name)
		if m.Label == "" || m.Head == "" || m.Reading == "" || m.value == nil {
			t.Errorf("%s: label %q, head %q, reading %q, getter %v: each is required", m.Name, m.Label, m.Head, m.Reading, m.value != nil)
		}
		if _, ok := kindNames[m.Kind]; !ok {
			t.Errorf("%s: kind %v", m.Name, m.Kind)
		}
		if m.Better < LowerIsBetter || m.Better > Neutral {
			t.Errorf("%s: direction %v", m.Name, m.Better)
		}
		if m.Key && m.Better != LowerIsBetter {
			t.Errorf("%s: a key metric is ranked lowest first, but it is %v", m.Name, m.Better)
		}
		if !strings.HasSuffix(m.Reading, ".") || strings.Contains(m.Reading, "\n") {
			t.Errorf("%s: reading %q is not one sentence on one line", m.Name, m.Reading)
		}
		if u := m.Unit(); u != "" && m.Kind != KindFactor && !strings.HasSuffix(m.Head, u) {
			t.Errorf("%s: heading %q does not name the unit %q", m.Name, m.Head, u)
		}
		if got, ok := LookupMetric(m.Name); !ok || got.Name != m.Name {
			t.Errorf("LookupMetric(%q) = %q, %v", m.Name, got.Name, ok)
		}
	}
	if d := cmp.Diff(Metrics(), slices.Sorted(slices.Values(names))); d != "" {
		t.Errorf("Metrics() and the table differ (-Metrics +table):\n%s", d)
	}
	if k := KeyMetrics(); len(k) == 0 || k[0] != DefaultKeyMetric {
		t.Errorf("KeyMetrics() = %v, want the default %s first", k, DefaultKeyMetric)
	}
	if _, ok := LookupMetric("p95_ms"); ok {
		t.Error("LookupMetric knows p95_ms")
	}
}

// TestStrategyFieldsHaveMetrics makes sure a metric added to Strategy's
// JSON gets a row of the table: every number at the top level of a
// Strategy is a metric of the same name, but for the listed bookkeeping.
func TestStrategyFieldsHaveMetrics(t *testing.T) {
	notMetrics := map[string]bool{"elapsed_s": true, "unattributed": true}
	typ := reflect.TypeFor[Strategy]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		k := f.Type.Kind()
		if k == reflect.Pointer {
			k = f.Type.Elem().Kind()
		}
		if k != reflect.Float64 && k != reflect.Int && k != reflect.Int64 || notMetrics[name] {
			continue
		}
		if _, ok := LookupMetric(name); !ok {
			t.Errorf("Strategy.%s (%s) has no metric", f.Name, name)
		}
	}
}

// TestMetricListsResolve checks the metric lists of the views and the
// comparisons name metrics of the table.
func TestMetricListsResolve(t *testing.T) {
	lists := map[string][]string{
		"comparisonColumns": comparisonColumns, "scenarioColumns": scenarioColumns, "summaryMetrics": summaryMetrics,
		"compared": compared, "regressionChecked": regressionChecked,
	}
	for _, c := range terminalColumns {
		lists["terminalColumns"] = append(lists["terminalColumns"], c.metric)
	}
	for list, names := range lists {
		for _, name := range names {
			if _, ok := LookupMetric(name); !ok {
				t.Errorf("%s names %q, which is no metric", list, name)
			}
		}
	}
	for _, name := range regressionChecked {
		m, _ := LookupMetric(name)
		if m.Better == Neutral {
			t.Errorf("regression check on %s, which is neither better nor worse either way", name)
		}
	}
}

func TestMetricFormat(t *testing.T) {
	for _, tc := range []struct {
		metric     string
		v          float64
		text, with string
	}{
		{"error_ratio", 0.4501, "45.01", "45.01%"},
		{"error_ratio", 0.00001, "<0.01", "<0.01%"},
		{"p99_ms", 11.34, "11.3", "11.3 ms"},
		{"p99_ms", 2013, "2013", "2013 ms"},
		{"max_avg_load", 1.106, "1.11", "1.11 ×"},
		{"max_jump_rps", 124, "124", "124 req/s"},
		{"achieved_rate", 3712.4, "3712", "3712 req/s"},
		{"error_tail_s", 3, "3", "3 s"},
		{"ejections", 6, "6", "6"},
		{"affinity", math.NaN(), "—", "—"},
		{"p99_ms", math.Inf(1), "n/a", "n/a"},
	} {
		m, _ := LookupMetric(tc.metric)
		if got := m.Text(tc.v); got != tc.text {
			t.Errorf("%s Text(%v) = %q, want %q", tc.metric, tc.v, got, tc.text)
		}
		if got := m.Format(tc.v); got != tc.with {
			t.Errorf("%s Format(%v) = %q, want %q", tc.metric, tc.v, got, tc.with)
		}
	}
}

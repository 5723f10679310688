package reports

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
		// herd: round robin balances best but times out 5.62% of its
		// requests; it is no winner on balance.
		{"failing strategy not ranked", &Summary{KeyMetric: "share_stddev", Strategies: []Strategy{
			{Name: "round-robin", Requests: 5, ErrorRatio: 0.0562, TimeoutRatio: 0.0562, ShareStddev: 0.0003},
			{Name: "p2c", Requests: 5, ShareStddev: 0.007473},
			{Name: "least-inflight", Requests: 5, ShareStddev: 0.007522},
			{Name: "slow-ok", Requests: 5, ErrorRatio: 0.005, TimeoutRatio: 0.005, ShareStddev: 0.2}}},
			[]string{"p2c", "least-inflight", "slow-ok"},
			"Best on per-second variation of the instances' shares (std. dev.): p2c and least-inflight (0.75%). Worst: slow-ok (20.00%), 19.25 percentage points higher, 27× the best. " +
				"Not ranked: round-robin (errors 5.62%, timeouts 5.62%). A strategy is ranked on per-second variation of the instances' shares (std. dev.) only when its error and timeout ratios are within 0.5 percentage points of the lowest (errors 0.00%, timeouts 0.00%)."},
		{"ties at the best", &Summary{KeyMetric: "p99_ms", Strategies: []Strategy{
			{Name: "a", Requests: 1, LatencyMs: Latency{P99: 20}}, {Name: "b", Requests: 1, LatencyMs: Latency{P99: 10}}, {Name: "c", Requests: 1, LatencyMs: Latency{P99: 10}}}},
			[]string{"b", "c", "a"},
			"Best on p99 latency: b and c (10.0 ms). Worst: a (20.0 ms), 10.0 ms higher, 2.0× the best."},
		{"error metric needs no gate", &Summary{KeyMetric: "timeout_ratio", Strategies: []Strategy{
			{Name: "a", Requests: 1, ErrorRatio: 0.5, TimeoutRatio: 0.5}, {Name: "b", Requests: 1}}},
			[]string{"b", "a"},
			"Best on timed-out requests: b (0.00%). Worst: a (50.00%), 50.00 percentage points higher; the best had none."},
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

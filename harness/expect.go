package harness

import (
	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// MetricValue returns st's value of metric, one of experiments.Metrics():
// ratios as fractions, latencies in milliseconds. bad_ratio is the
// verdict's (reports.MetricValue): error_ratio + slow_ratio − timeout_ratio,
// kept within [max(error_ratio, slow_ratio), 1]. ok is false for any other
// name.
func MetricValue(st reports.Strategy, metric string) (v float64, ok bool) {
	switch metric {
	case "bad_ratio":
		return reports.MetricValue(&st, metric)
	case "error_ratio":
		return st.ErrorRatio, true
	case "success_ratio":
		return st.SuccessRatio, true
	case "timeout_ratio":
		return st.TimeoutRatio, true
	case "slow_ratio":
		return st.SlowRatio, true
	case "faulty_share":
		return st.FaultyShare, true
	case "p50_ms":
		return st.LatencyMs.P50, true
	case "p90_ms":
		return st.LatencyMs.P90, true
	case "p99_ms":
		return st.LatencyMs.P99, true
	case "p999_ms":
		return st.LatencyMs.P999, true
	case "max_ms":
		return st.LatencyMs.Max, true
	case "mean_ms":
		return st.LatencyMs.Mean, true
	case "ejections":
		return float64(st.Ejections), true
	case "achieved_rate":
		return st.AchievedRate, true
	case "requests":
		return float64(st.Requests), true
	}
	return 0, false
}

// CheckExpectations checks exp's expectations against sum, in the file's
// order, and returns one result each and how many failed. The strategy of
// an expectation is looked up by name in sum.Strategies; when the summary
// has none of that name the result is Missing, neither passed nor failed.
// A strategy that was interrupted (Partial) is checked on what was measured.
// An expectation on a metric MetricValue does not know fails with Got 0.
func CheckExpectations(exp *experiments.Experiment, sum *reports.Summary) (results []reports.ExpectationResult, failed int) {
	byName := make(map[string]*reports.Strategy, len(sum.Strategies))
	for i := range sum.Strategies {
		byName[sum.Strategies[i].Name] = &sum.Strategies[i]
	}
	for _, x := range exp.Expect {
		r := reports.ExpectationResult{Strategy: x.Strategy, Metric: x.Metric, Op: x.Op, Want: x.Value}
		st, ok := byName[x.Strategy]
		if !ok {
			r.Missing = true
			results = append(results, r)
			continue
		}
		got, known := MetricValue(*st, x.Metric)
		r.Got = got
		r.Passed = known && x.Holds(got)
		if !r.Passed {
			failed++
		}
		results = append(results, r)
	}
	return results, failed
}

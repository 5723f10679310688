package harness

import (
	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// CheckExpectations checks exp's expectations against sum, in the file's
// order, and returns one result each and how many failed. The strategy of
// an expectation is looked up by name in sum.Strategies; when the summary
// has none of that name, or the run could not measure the metric
// (reports.Unobserved), the result is Missing, neither passed nor failed.
// A strategy that was interrupted (Partial) is checked on what was measured.
// An expectation on a metric reports.Value does not know fails.
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
		if reports.Unobserved(st, x.Metric) {
			r.Missing = true
			results = append(results, r)
			continue
		}
		got, known := reports.Value(st, x.Metric)
		if known {
			r.Got = got
		}
		r.Passed = known && x.Holds(got)
		if !r.Passed {
			failed++
		}
		results = append(results, r)
	}
	return results, failed
}

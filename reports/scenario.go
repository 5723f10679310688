package reports

import (
	"fmt"
	"math"
)

// scenarioMetric is a scenario metric shown in the reports' scenario table
// when a run measured it.
type scenarioMetric struct {
	name  string // as in Metrics()
	head  string // column heading
	title string // what the column means, for a tooltip
	cell  func(float64) string
	// shown reports whether the column says anything for s.
	shown func(s *Summary) bool
}

func anyStrategy(s *Summary, f func(*Strategy) bool) bool {
	for i := range s.Strategies {
		if f(&s.Strategies[i]) {
			return true
		}
	}
	return false
}

var scenarioMetrics = []scenarioMetric{
	{"max_avg_load", "max/avg load", "the busiest instance's requests over the mean per instance (1 = even)",
		func(v float64) string { return fmt.Sprintf("%.2f", v) },
		func(s *Summary) bool { return anyStrategy(s, func(st *Strategy) bool { return st.MaxAvgLoad > 0 }) }},
	{"affinity", "affinity %", "share of keyed requests served by their key's home instance (the one that served the key most)",
		fmtPct, func(s *Summary) bool { return anyStrategy(s, func(st *Strategy) bool { return st.Affinity != nil }) }},
	{"max_jump_rps", "max 1 s jump req/s", "the largest change of any instance's request rate from one second to the next",
		func(v float64) string { return fmt.Sprintf("%.0f", v) },
		func(s *Summary) bool { return anyStrategy(s, func(st *Strategy) bool { return st.MaxAvgLoad > 0 }) }},
	{"share_stddev", "share std dev %", "mean over instances of the standard deviation of each one's per-second share of requests",
		func(v float64) string { return fmt.Sprintf("%.2f", 100*v) },
		func(s *Summary) bool { return anyStrategy(s, func(st *Strategy) bool { return st.MaxAvgLoad > 0 }) }},
	{"error_tail_s", "errors past fault s", "how long errors (> 1% of a second's requests) went on after the last fault ended",
		func(v float64) string { return fmt.Sprintf("%.0f", v) },
		func(s *Summary) bool { return anyStrategy(s, func(st *Strategy) bool { return st.ErrorTailS != nil }) }},
	{"max_utilization", "max utilization %", "the busiest instance's share of worker time spent serving",
		fmtPct, func(s *Summary) bool {
			return anyStrategy(s, func(st *Strategy) bool {
				v, _ := Value(st, "max_utilization")
				return !math.IsNaN(v)
			})
		}},
}

// scenarioTable returns the heading row and one row per strategy of the
// scenario metrics s measured; nil when it measured none.
func scenarioTable(s *Summary) (cols []scenarioMetric, rows [][]string) {
	for _, m := range scenarioMetrics {
		if m.shown(s) {
			cols = append(cols, m)
		}
	}
	if len(cols) == 0 {
		return nil, nil
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		row := []string{st.Name}
		for _, m := range cols {
			v, _ := Value(st, m.name)
			if math.IsNaN(v) {
				row = append(row, "—")
			} else {
				row = append(row, m.cell(v))
			}
		}
		rows = append(rows, row)
	}
	return cols, rows
}

package reports

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict ranks the strategies of a run by its key metric.
type Verdict struct {
	// Metric is the metric ranked by: the Summary's KeyMetric, or
	// DefaultKeyMetric when that is empty or not a key metric.
	Metric string
	// Unknown is the Summary's KeyMetric when it named no key metric.
	Unknown string
	// Ranking lists the strategies with a finite value and at least one
	// request, best (lowest) first; ties keep the Summary's order.
	Ranking []Ranked
}

// Ranked is one strategy's place in a Verdict.
type Ranked struct {
	Strategy string
	Value    float64
	Partial  bool // the strategy was interrupted
	Behind   bool // its load generator fell behind
}

// VerdictOf ranks s's strategies by s.KeyMetric.
func VerdictOf(s *Summary) Verdict {
	v := Verdict{Metric: s.KeyMetric}
	if v.Metric == "" {
		v.Metric = DefaultKeyMetric
	}
	if m, ok := LookupMetric(v.Metric); !ok || !m.Key {
		v.Unknown, v.Metric = v.Metric, DefaultKeyMetric
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		val, _ := MetricValue(st, v.Metric)
		if st.Requests <= 0 || !finite(val) {
			continue
		}
		v.Ranking = append(v.Ranking, Ranked{Strategy: st.Name, Value: val, Partial: st.Partial, Behind: st.GeneratorBehind})
	}
	slices.SortStableFunc(v.Ranking, func(a, b Ranked) int {
		switch {
		case a.Value < b.Value:
			return -1
		case a.Value > b.Value:
			return 1
		}
		return 0
	})
	return v
}

// metric is the verdict's metric from the table.
func (v Verdict) metric() Metric {
	m, ok := LookupMetric(v.Metric)
	if !ok {
		m, _ = LookupMetric(DefaultKeyMetric)
	}
	return m
}

// Label is the metric's name for prose, e.g. "p99 latency".
func (v Verdict) Label() string { return v.metric().Label }

// Format writes a value of the verdict's metric with its unit.
func (v Verdict) Format(x float64) string { return v.metric().Format(x) }

// Best and Worst are the first and last of the ranking; ok is false when
// fewer than one strategy was ranked.
func (v Verdict) Best() (Ranked, bool) {
	if len(v.Ranking) == 0 {
		return Ranked{}, false
	}
	return v.Ranking[0], true
}

// Worst is the last of the ranking; see Best.
func (v Verdict) Worst() (Ranked, bool) {
	if len(v.Ranking) == 0 {
		return Ranked{}, false
	}
	return v.Ranking[len(v.Ranking)-1], true
}

// Tied reports whether every ranked strategy has the same value.
func (v Verdict) Tied() bool {
	b, ok1 := v.Best()
	w, ok2 := v.Worst()
	return ok1 && ok2 && b.Value == w.Value
}

// Margin says how much worse the worst strategy is than the best: the
// difference in the metric's unit (percentage points for ratios) and, when
// the best is positive, the factor worst/best, e.g. "42.62 percentage
// points higher, 1422× the best". It is "" when fewer than two strategies
// differ.
func (v Verdict) Margin() string {
	b, _ := v.Best()
	w, _ := v.Worst()
	if len(v.Ranking) < 2 || v.Tied() {
		return ""
	}
	m := v.metric()
	var diff string
	if m.Kind == KindRatio {
		diff = fmtPct(w.Value-b.Value) + " percentage points"
		if strings.HasPrefix(diff, "<") {
			diff = "less than " + strings.TrimPrefix(diff, "<")
		}
	} else {
		diff = m.Format(w.Value - b.Value)
	}
	switch {
	case b.Value > 0:
		return fmt.Sprintf("%s higher, %s× the best", diff, fmtFactor(w.Value/b.Value))
	default:
		return diff + " higher; the best had none"
	}
}

// String is the verdict in one plain sentence.
func (v Verdict) String() string {
	b, ok := v.Best()
	if !ok {
		return "No strategy has a value for " + v.Label() + "."
	}
	w, _ := v.Worst()
	switch {
	case len(v.Ranking) == 1:
		return fmt.Sprintf("Only %s was measured: %s %s.", b.Strategy, v.Label(), v.Format(b.Value))
	case v.Tied():
		return fmt.Sprintf("All %d strategies tie on %s at %s.", len(v.Ranking), v.Label(), v.Format(b.Value))
	}
	return fmt.Sprintf("Best on %s: %s (%s). Worst: %s (%s), %s.",
		v.Label(), b.Strategy, v.Format(b.Value), w.Strategy, v.Format(w.Value), v.Margin())
}

// fmtFactor formats a ratio of two values: "1.4", "12", "1400".
func fmtFactor(f float64) string {
	switch {
	case !finite(f):
		return "n/a"
	case f < 10:
		return fmt.Sprintf("%.1f", f)
	case f < 1e6:
		return fmt.Sprintf("%.0f", f)
	default:
		return fmt.Sprintf("%.1e", f)
	}
}

package reports

import (
	"fmt"
	"math"
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
	// request that failed about as few requests as the best (see
	// NotRanked), best (lowest) first; ties keep the Summary's order.
	Ranking []Ranked
	// NotRanked lists the strategies whose error or timeout ratio is more
	// than RankTolerance above the lowest among the strategies: a
	// strategy that times out a tenth of its requests is no winner on
	// balance or latency. Empty when the metric itself counts failures.
	NotRanked []Excluded
	// LowestErrorRatio and LowestTimeoutRatio are the lowest among the
	// strategies, which NotRanked is measured against.
	LowestErrorRatio, LowestTimeoutRatio float64
}

// RankTolerance is how far above the lowest error and timeout ratios a
// strategy may be and still be ranked: 0.5 percentage points.
const RankTolerance = 0.005

// Excluded is a strategy left out of a Verdict's ranking for its failures.
type Excluded struct {
	Strategy                 string
	ErrorRatio, TimeoutRatio float64
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
	var measured []*Strategy
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if val, _ := MetricValue(st, v.Metric); st.Requests > 0 && finite(val) {
			measured = append(measured, st)
		}
	}
	gate := !countsFailures(v.Metric) && len(measured) > 0
	if gate {
		v.LowestErrorRatio, v.LowestTimeoutRatio = math.Inf(1), math.Inf(1)
		for _, st := range measured {
			v.LowestErrorRatio = min(v.LowestErrorRatio, st.ErrorRatio)
			v.LowestTimeoutRatio = min(v.LowestTimeoutRatio, st.TimeoutRatio)
		}
	}
	// A hair of slack so that a ratio exactly at the tolerance is in.
	const slack = 1e-12
	for _, st := range measured {
		if gate && (st.ErrorRatio > v.LowestErrorRatio+RankTolerance+slack || st.TimeoutRatio > v.LowestTimeoutRatio+RankTolerance+slack) {
			v.NotRanked = append(v.NotRanked, Excluded{Strategy: st.Name, ErrorRatio: st.ErrorRatio, TimeoutRatio: st.TimeoutRatio})
			continue
		}
		val, _ := MetricValue(st, v.Metric)
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

// countsFailures reports whether a metric is itself a count of failed
// requests, so that ranking by it needs no failure gate.
func countsFailures(metric string) bool {
	switch metric {
	case "error_ratio", "timeout_ratio", "bad_ratio", "success_ratio":
		return true
	}
	return false
}

// Leaders are the strategies that share the best value, in ranking order.
func (v Verdict) Leaders() []string { return v.tiedWith(0) }

// Laggards are the strategies that share the worst value.
func (v Verdict) Laggards() []string { return v.tiedWith(len(v.Ranking) - 1) }

func (v Verdict) tiedWith(i int) []string {
	if i < 0 || i >= len(v.Ranking) {
		return nil
	}
	var names []string
	for _, r := range v.Ranking {
		if v.same(r.Value, v.Ranking[i].Value) {
			names = append(names, r.Strategy)
		}
	}
	return names
}

// NotRankedText says which strategies were left out of the ranking and
// why, in one sentence; "" when none was.
func (v Verdict) NotRankedText() string {
	if len(v.NotRanked) == 0 {
		return ""
	}
	var each []string
	for _, u := range v.NotRanked {
		each = append(each, fmt.Sprintf("%s (errors %s%%, timeouts %s%%)", u.Strategy, fmtPct(u.ErrorRatio), fmtPct(u.TimeoutRatio)))
	}
	return fmt.Sprintf("Not ranked: %s. A strategy is ranked on %s only when its error and timeout ratios are within %s percentage points of the lowest (errors %s%%, timeouts %s%%).",
		joinAnd(each), v.Label(), fmtNum(100*RankTolerance), fmtPct(v.LowestErrorRatio), fmtPct(v.LowestTimeoutRatio))
}

// joinAnd joins names as prose: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
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
	return ok1 && ok2 && v.same(b.Value, w.Value)
}

// same reports whether two values of the metric read the same in a
// report: values that print alike are a tie, not a win by a digit the
// reader cannot see.
// A value printed as a bound ("<0.01%") is compared exactly.
func (v Verdict) same(a, b float64) bool {
	fa := v.Format(a)
	return a == b || fa == v.Format(b) && !strings.HasPrefix(fa, "<")
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

// String is the verdict in plain sentences: the best and the worst, then
// the strategies left out of the ranking, if any.
func (v Verdict) String() string {
	var out string
	b, ok := v.Best()
	w, _ := v.Worst()
	switch {
	case !ok:
		out = "No strategy has a value for " + v.Label() + "."
	case len(v.Ranking) == 1 && len(v.NotRanked) > 0:
		out = fmt.Sprintf("Only %s is ranked: %s %s.", b.Strategy, v.Label(), v.Format(b.Value))
	case len(v.Ranking) == 1:
		out = fmt.Sprintf("Only %s was measured: %s %s.", b.Strategy, v.Label(), v.Format(b.Value))
	case v.Tied() && len(v.NotRanked) > 0:
		out = fmt.Sprintf("All %d ranked strategies tie on %s at %s.", len(v.Ranking), v.Label(), v.Format(b.Value))
	case v.Tied():
		out = fmt.Sprintf("All %d strategies tie on %s at %s.", len(v.Ranking), v.Label(), v.Format(b.Value))
	default:
		out = fmt.Sprintf("Best on %s: %s (%s). Worst: %s (%s), %s.",
			v.Label(), joinAnd(v.Leaders()), v.Format(b.Value), joinAnd(v.Laggards()), v.Format(w.Value), v.Margin())
	}
	if nr := v.NotRankedText(); nr != "" {
		out += " " + nr
	}
	return out
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

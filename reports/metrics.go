package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultKeyMetric is the key metric of an experiment that names none.
const DefaultKeyMetric = "bad_ratio"

// metricValues are the Strategy metrics that expectations and the verdict
// name: ratios as fractions, latencies in milliseconds.
var metricValues = map[string]func(*Strategy) float64{
	"bad_ratio":     badRatio,
	"error_ratio":   func(st *Strategy) float64 { return st.ErrorRatio },
	"success_ratio": func(st *Strategy) float64 { return st.SuccessRatio },
	"timeout_ratio": func(st *Strategy) float64 { return st.TimeoutRatio },
	"slow_ratio":    func(st *Strategy) float64 { return st.SlowRatio },
	"faulty_share":  func(st *Strategy) float64 { return st.FaultyShare },
	"p50_ms":        func(st *Strategy) float64 { return st.LatencyMs.P50 },
	"p90_ms":        func(st *Strategy) float64 { return st.LatencyMs.P90 },
	"p99_ms":        func(st *Strategy) float64 { return st.LatencyMs.P99 },
	"p999_ms":       func(st *Strategy) float64 { return st.LatencyMs.P999 },
	"max_ms":        func(st *Strategy) float64 { return st.LatencyMs.Max },
	"mean_ms":       func(st *Strategy) float64 { return st.LatencyMs.Mean },
	"ejections":     func(st *Strategy) float64 { return float64(st.Ejections) },
	"achieved_rate": func(st *Strategy) float64 { return st.AchievedRate },
	"requests":      func(st *Strategy) float64 { return float64(st.Requests) },
	"max_avg_load":  func(st *Strategy) float64 { return st.MaxAvgLoad },
	"affinity":      func(st *Strategy) float64 { return orNaN(st.Affinity) },
	"max_jump_rps":  func(st *Strategy) float64 { return st.MaxJumpRps },
	"share_stddev":  func(st *Strategy) float64 { return st.ShareStddev },
	"error_tail_s":  func(st *Strategy) float64 { return orNaN(st.ErrorTailS) },
	"max_utilization": func(st *Strategy) float64 {
		u := math.NaN()
		for _, in := range st.Instances {
			if in.Utilization != nil && !(*in.Utilization <= u) {
				u = *in.Utilization
			}
		}
		return u
	},
}

// orNaN is *p, or NaN when p is nil (a metric the run did not measure).
func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Metrics returns the names of every Strategy metric Value knows, sorted.
func Metrics() []string {
	names := make([]string, 0, len(metricValues))
	for name := range metricValues {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Value returns st's value of the named metric (one of Metrics), and false
// for a name it does not know.
func Value(st *Strategy, name string) (float64, bool) {
	f, ok := metricValues[name]
	if !ok {
		return math.NaN(), false
	}
	return f(st), true
}

// keyMetric is a metric a Summary's KeyMetric may name. For every one of
// them lower is better.
type keyMetric struct {
	name    string
	label   string // noun phrase for prose, e.g. "p99 latency"
	percent bool   // a ratio, shown in percent; else in unit
	unit    string // "" = milliseconds
}

var keyMetrics = []keyMetric{
	{"bad_ratio", "bad requests (failed or slow)", true, ""},
	{"error_ratio", "failed requests", true, ""},
	{"slow_ratio", "slow requests", true, ""},
	{"timeout_ratio", "timed-out requests", true, ""},
	{"faulty_share", "share of requests sent to faulty instances", true, ""},
	{"p99_ms", "p99 latency", false, ""},
	{"p999_ms", "p99.9 latency", false, ""},
	{"max_avg_load", "busiest instance's load over the average", false, "×"},
	{"max_jump_rps", "largest one-second jump of an instance's traffic", false, "req/s"},
	{"share_stddev", "per-second variation of the instances' shares (std. dev.)", true, ""},
	{"error_tail_s", "time errors lasted past the fault", false, "s"},
}

// unitOf is the unit a non-percent key metric is shown in.
func (m keyMetric) unitOf() string {
	if m.unit == "" {
		return "ms"
	}
	return m.unit
}

// KeyMetrics returns the metric names a Summary's KeyMetric may take, the
// default first. Lower is better for each.
func KeyMetrics() []string {
	out := make([]string, len(keyMetrics))
	for i, m := range keyMetrics {
		out[i] = m.name
	}
	return out
}

func lookupKeyMetric(name string) (keyMetric, bool) {
	i := slices.IndexFunc(keyMetrics, func(m keyMetric) bool { return m.name == name })
	if i < 0 {
		return keyMetric{}, false
	}
	return keyMetrics[i], true
}

// MetricValue returns st's value of the named key metric (one of
// KeyMetrics; "" means DefaultKeyMetric), and false for a name that is not
// a key metric.
func MetricValue(st *Strategy, name string) (float64, bool) {
	if name == "" {
		name = DefaultKeyMetric
	}
	if _, ok := lookupKeyMetric(name); !ok {
		return math.NaN(), false
	}
	return Value(st, name)
}

// badRatio is the share of requests that failed or were slow, computed from
// the strategy's ratios: error_ratio + slow_ratio − timeout_ratio, since a
// timeout is both an error and slow. A request that failed slowly without
// timing out is counted twice, so the sum is an upper bound; it is clamped
// to [max(error_ratio, slow_ratio), 1], between which the true share lies.
func badRatio(st *Strategy) float64 {
	lo := math.Max(st.ErrorRatio, st.SlowRatio)
	v := st.ErrorRatio + st.SlowRatio - st.TimeoutRatio
	return math.Max(lo, math.Min(1, v))
}

// Verdict ranks the strategies of a run by its key metric.
type Verdict struct {
	// Metric is the metric ranked by: the Summary's KeyMetric, or
	// DefaultKeyMetric when that is empty or unknown.
	Metric string
	// Unknown is the Summary's KeyMetric when it named no known metric.
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
	if _, ok := lookupKeyMetric(v.Metric); !ok {
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

// Label is the metric's name for prose, e.g. "p99 latency".
func (v Verdict) Label() string {
	m, _ := lookupKeyMetric(v.Metric)
	return m.label
}

// Format writes a value of the verdict's metric with its unit.
func (v Verdict) Format(x float64) string {
	m, _ := lookupKeyMetric(v.Metric)
	if m.percent {
		return fmtPct(x) + "%"
	}
	return fmtMs(x) + " " + m.unitOf()
}

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
	m, _ := lookupKeyMetric(v.Metric)
	var diff string
	if m.percent {
		diff = fmtPct(w.Value-b.Value) + " percentage points"
		if strings.HasPrefix(diff, "<") {
			diff = "less than " + strings.TrimPrefix(diff, "<")
		}
	} else {
		diff = fmtMs(w.Value-b.Value) + " " + m.unitOf()
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

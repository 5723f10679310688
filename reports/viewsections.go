package reports

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// comparisonColumns are the metrics of the comparison table, in order.
var comparisonColumns = []string{"faulty_share", "p50_ms", "p99_ms", "slow_ratio", "error_ratio", "timeout_ratio", "ejections", "requests", "achieved_rate"}

// scenarioColumns are the metrics of the scenario table, in order; each is
// shown when the run measured it for any strategy.
var scenarioColumns = []string{"max_avg_load", "affinity", "max_jump_rps", "share_stddev", "error_tail_s", "end_goodput_ratio", "attempts_per_request", "duplicate_executions", "max_utilization"}

// summaryMetrics are the metrics of a strategy's one-line summary, after
// the key metric.
var summaryMetrics = []string{"error_ratio", "p99_ms"}

// instanceColumns head a per-instance table.
var instanceColumns = []column{
	{Head: "instance", Num: true}, {Head: "status"}, {Head: "requests", Num: true}, {Head: "share %", Num: true},
	{Head: "errors", Num: true}, {Head: "error %", Num: true}, {Head: "timeouts", Num: true}, {Head: "slow", Num: true},
	{Head: "p50 ms", Num: true}, {Head: "p99 ms", Num: true}, {Head: "max ms", Num: true},
}

// headFor is m's column heading in a report of s.
func headFor(m Metric, s *Summary) string {
	if m.thresholdInHead && s.SlowThresholdMs > 0 {
		return m.Head + " (> " + fmtNum(s.SlowThresholdMs) + " ms)"
	}
	return m.Head
}

// readingFor is m.Reading with s's slow threshold named.
func readingFor(m Metric, s *Summary) string {
	if s.SlowThresholdMs > 0 {
		return strings.ReplaceAll(m.Reading, "the slow threshold", fmtNum(s.SlowThresholdMs)+" ms")
	}
	return m.Reading
}

func newVerdictView(s *Summary) verdictView {
	v := VerdictOf(s)
	m := v.metric()
	vv := verdictView{Metric: v.Metric, Label: m.Label, Head: headFor(m, s),
		Definition: readingFor(m, s) + " " + capitalize(m.Better.String()) + "."}
	if v.Unknown != "" {
		vv.Caveats = append(vv.Caveats, fmt.Sprintf("The experiment names the key metric %q, which this report does not know; strategies are ranked by %s instead.", v.Unknown, m.Label))
	}
	if len(v.Ranking) == 0 {
		vv.None = true
		return vv
	}
	best, _ := v.Best()
	worst, _ := v.Worst()
	vv.Single, vv.Tied = len(v.Ranking) == 1, v.Tied()
	vv.SomeNotRanked = len(v.NotRanked) > 0
	vv.Margin = v.Margin()
	for i, r := range v.Ranking {
		rv := rankView{Place: i + 1, Strategy: r.Strategy, Value: m.Format(r.Value)}
		if worst.Value > 0 {
			rv.BarPct = math.Round(1000*r.Value/worst.Value) / 10
		}
		switch {
		case vv.Single || vv.Tied:
		case v.same(r.Value, best.Value):
			rv.Mark = "best"
		case v.same(r.Value, worst.Value):
			rv.Mark = "worst"
		}
		if r.Partial {
			rv.Flags = append(rv.Flags, "partial")
		}
		if r.Behind {
			rv.Flags = append(rv.Flags, "generator behind")
		}
		vv.Ranking = append(vv.Ranking, rv)
		if i == 0 || i == len(v.Ranking)-1 {
			if r.Partial {
				vv.Caveats = append(vv.Caveats, r.Strategy+" was interrupted: its numbers cover only part of the attack.")
			}
			if r.Behind {
				vv.Caveats = append(vv.Caveats, r.Strategy+"'s load generator fell behind: its numbers describe a lighter load than the target.")
			}
		}
	}
	vv.Best, vv.Worst = vv.Ranking[0], vv.Ranking[len(vv.Ranking)-1]
	vv.Best.Strategy, vv.Worst.Strategy = joinAnd(v.Leaders()), joinAnd(v.Laggards())
	if nr := v.NotRankedText(); nr != "" {
		vv.Caveats = append([]string{nr}, vv.Caveats...)
	}
	if n := len(s.Strategies) - len(v.Ranking) - len(v.NotRanked); n > 0 {
		vv.Caveats = append(vv.Caveats, fmt.Sprintf("%d strategies without requests or without a value are not ranked.", n))
	}
	return vv
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func newExpectationsView(s *Summary) *expectationsView {
	if len(s.Expectations) == 0 {
		return nil
	}
	e := &expectationsView{}
	rank := func(r ExpectationResult) int {
		switch {
		case r.Missing:
			return 1
		case r.Passed:
			return 2
		}
		return 0
	}
	exps := slices.Clone(s.Expectations)
	slices.SortStableFunc(exps, func(a, b ExpectationResult) int { return rank(a) - rank(b) })
	for _, r := range exps {
		m, known := LookupMetric(r.Metric)
		row := expectationRow{Strategy: r.Strategy, Check: r.Metric + " " + r.Op + " " + fmtWant(m, known, r.Want), Got: fmtGot(m, known, r.Got)}
		switch {
		case r.Missing:
			e.Missing++
			row.State, row.Status, row.Got = "missing", "missing", "not measured"
		case r.Passed:
			e.Passed++
			row.State, row.Status = "passed", "passed"
		default:
			e.Failed++
			row.State, row.Status = "failed", "FAILED"
		}
		e.Rows = append(e.Rows, row)
	}
	return e
}

// fmtWant writes an expectation's bound as the file gives it, with the
// percentage for a ratio.
func fmtWant(m Metric, known bool, v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if known && m.Kind == KindRatio {
		s += " (" + m.Format(v) + ")"
	}
	return s
}

// fmtGot writes a measured value beside an expectation: a ratio as a
// fraction like its bound and in percent, another metric with its unit.
func fmtGot(m Metric, known bool, v float64) string {
	switch {
	case !known:
		return strconv.FormatFloat(v, 'g', 6, 64)
	case m.Kind == KindRatio:
		return strconv.FormatFloat(v, 'g', 4, 64) + " (" + m.Format(v) + ")"
	}
	return m.Format(v)
}

// comparisonTable has one row per strategy with the comparisonColumns,
// and the key metric's column first when it is not among them; the key
// metric's best and worst cells are marked.
func comparisonTable(s *Summary) table {
	v := VerdictOf(s)
	key := v.metric()
	metrics := mustMetrics(comparisonColumns)
	if !slices.Contains(comparisonColumns, key.Name) {
		metrics = slices.Insert(metrics, 0, key)
	}
	t := table{Columns: []column{{Head: "strategy"}}}
	for _, m := range metrics {
		t.Columns = append(t.Columns, column{Head: headFor(m, s), Title: readingFor(m, s), Num: true, Key: m.Name == key.Name})
	}
	best, worst := math.NaN(), math.NaN()
	if b, ok := v.Best(); ok && !v.Tied() {
		w, _ := v.Worst()
		best, worst = b.Value, w.Value
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		r := []cell{{Text: st.Name, Name: true, Badges: strategyFlags(st)}}
		for _, m := range metrics {
			c := cell{Text: textIn(m, s, st), Num: true, Key: m.Name == key.Name}
			if val := m.Value(st); c.Key && st.Requests > 0 {
				switch val {
				case best:
					c.Mark = "best"
				case worst:
					c.Mark = "worst"
				}
			}
			r = append(r, c)
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// strategyFlags are what weakens a strategy's numbers, as short badges.
func strategyFlags(st *Strategy) []string {
	var flags []string
	if st.Partial {
		flags = append(flags, "partial")
	}
	if st.GeneratorBehind {
		flags = append(flags, "generator behind")
	}
	return flags
}

// scenarioTable has one row per strategy with the scenarioColumns s
// measured; nil when it measured none.
func scenarioTable(s *Summary) *table {
	var metrics []Metric
	for _, m := range mustMetrics(scenarioColumns) {
		if slices.ContainsFunc(s.Strategies, func(st Strategy) bool { return m.measuredIn(s, &st) }) {
			metrics = append(metrics, m)
		}
	}
	if len(metrics) == 0 {
		return nil
	}
	t := &table{Columns: []column{{Head: "strategy"}}}
	for _, m := range metrics {
		t.Columns = append(t.Columns, column{Head: headFor(m, s), Title: readingFor(m, s), Num: true})
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		r := []cell{{Text: st.Name, Name: true}}
		for _, m := range metrics {
			r = append(r, cell{Text: textIn(m, s, st), Num: true})
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

func newStrategyView(s *Summary, st *Strategy, anchor string) strategyView {
	sv := strategyView{Anchor: anchor, Name: st.Name, Flags: strategyFlags(st)}
	withAttempts := showAttempts(s)

	key, _ := LookupMetric(VerdictOf(s).Metric)
	var parts []string
	for _, m := range append([]Metric{key}, mustMetrics(summaryMetrics)...) {
		if m.Name == key.Name && len(parts) > 0 {
			continue
		}
		parts = append(parts, m.Label+" "+m.Format(m.Value(st)))
	}
	sv.Summary = strings.Join(append(parts, strconv.FormatInt(st.Requests, 10)+" requests"), ", ")

	sv.Facts = append(sv.Facts, fmt.Sprintf("%d requests in %s s (%s req/s)", st.Requests, fmtNum(st.ElapsedS), fmtNum(st.AchievedRate)))
	if st.GeneratorBehind {
		sv.Facts = append(sv.Facts, fmt.Sprintf("generator behind: send lag p50 %s ms, p99 %s ms, max %s ms",
			fmtMs(st.SendLagMs.P50), fmtMs(st.SendLagMs.P99), fmtMs(st.SendLagMs.Max)))
	}
	sv.Facts = append(sv.Facts, fmt.Sprintf("latency ms: mean %s, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s",
		fmtMs(st.LatencyMs.Mean), fmtMs(st.LatencyMs.P50), fmtMs(st.LatencyMs.P90),
		fmtMs(st.LatencyMs.P99), fmtMs(st.LatencyMs.P999), fmtMs(st.LatencyMs.Max)))
	sv.Facts = append(sv.Facts, fmt.Sprintf("success %s%%, errors %s%%, timeouts %s%%, slow %s%%",
		fmtSuccess(st.SuccessRatio), fmtPct(st.ErrorRatio), fmtPct(st.TimeoutRatio), fmtPct(st.SlowRatio)))
	if st.Unattributed > 0 {
		sv.Facts = append(sv.Facts, fmt.Sprintf("%d requests never reached an instance", st.Unattributed))
	}
	sv.Incidents = incidentViews(st)
	if len(st.Events) > len(sv.Incidents) { // the strategy's own events
		ej, re := eventCounts(st.Events)
		sv.Facts = append(sv.Facts, fmt.Sprintf("%d ejection and %d re-admission events", ej, re))
	}
	if f := subchannelFact(st.Events); f != "" {
		sv.Facts = append(sv.Facts, f)
	}

	if n, ok := attemptsOf(st); ok {
		var answered int64
		for _, in := range st.Instances {
			answered += in.Requests
		}
		if n != answered {
			sv.Facts = append(sv.Facts, fmt.Sprintf("%d attempts on the instances for %d requests: the proxy retried (attempts counts every try, requests only the one that answered)", n, answered))
		}
	}

	faulty := faultySet(s, st)
	for _, in := range st.Instances {
		cells := []string{strconv.FormatInt(in.Requests, 10)}
		if withAttempts {
			a := "—"
			if in.Attempts != nil {
				a = strconv.FormatInt(*in.Attempts, 10)
			}
			cells = append(cells, a)
		}
		sv.Instances = append(sv.Instances, instanceView{ID: in.ID, Faulty: faulty[in.ID], Cells: append(cells,
			fmtPct(in.Share),
			strconv.FormatInt(in.Errors, 10), fmtPct(in.ErrorRatio),
			strconv.FormatInt(in.Timeouts, 10), strconv.FormatInt(in.Slow, 10),
			fmtMs(in.LatencyMs.P50), fmtMs(in.LatencyMs.P99), fmtMs(in.LatencyMs.Max),
		)})
	}
	return sv
}

// attemptsOf is the sum of st's instances' attempts; ok is false when
// they were not observed.
func attemptsOf(st *Strategy) (n int64, ok bool) {
	for _, in := range st.Instances {
		if in.Attempts != nil {
			n, ok = n+*in.Attempts, true
		}
	}
	return n, ok
}

// showAttempts reports whether a per-instance table of s needs the
// attempts column: an instance somewhere got attempts other than its
// requests (a proxy retried).
func showAttempts(s *Summary) bool {
	for _, st := range s.Strategies {
		for _, in := range st.Instances {
			if in.Attempts != nil && *in.Attempts != in.Requests {
				return true
			}
		}
	}
	return false
}

// instanceColumnsOf are the per-instance columns of a report of s: the
// attempts column after requests when showAttempts.
func instanceColumnsOf(s *Summary) []column {
	if !showAttempts(s) {
		return instanceColumns
	}
	cols := slices.Clone(instanceColumns)
	return slices.Insert(cols, 3, column{Head: "attempts", Num: true})
}

// eventCounts counts the events that took an instance out of traffic and
// those that put one back (see takesOut and putsBack).
func eventCounts(events []Event) (ejects, readmits int) {
	for _, e := range events {
		switch {
		case takesOut(e):
			ejects++
		case putsBack(e):
			readmits++
		}
	}
	return ejects, readmits
}

package reports

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// metric is one headline number of a strategy, for comparisons.
type metric struct {
	name    string
	percent bool // a ratio shown in percent; differences in percentage points
	value   func(Strategy) float64
}

var headline = []metric{
	{"requests", false, func(s Strategy) float64 { return float64(s.Requests) }},
	{"achieved rate req/s", false, func(s Strategy) float64 { return s.AchievedRate }},
	{"faulty share", true, func(s Strategy) float64 { return s.FaultyShare }},
	{"error ratio", true, func(s Strategy) float64 { return s.ErrorRatio }},
	{"timeout ratio", true, func(s Strategy) float64 { return s.TimeoutRatio }},
	{"slow ratio", true, func(s Strategy) float64 { return s.SlowRatio }},
	{"p50 ms", false, func(s Strategy) float64 { return s.LatencyMs.P50 }},
	{"p99 ms", false, func(s Strategy) float64 { return s.LatencyMs.P99 }},
	{"p99.9 ms", false, func(s Strategy) float64 { return s.LatencyMs.P999 }},
	{"ejections", false, func(s Strategy) float64 { return float64(s.Ejections) }},
}

// WriteComparison prints, per strategy, the headline metrics of two runs
// side by side with their differences (B − A): absolute, and relative to A.
// Strategies are matched by name; one present in a single run is listed
// with the other side empty.
func WriteComparison(w io.Writer, a, b *Summary) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n", describeRun(a), describeRun(b))
	if a.Experiment != b.Experiment {
		fmt.Fprintf(w, "NOTE: the runs are of different experiments (%s, %s)\n", a.Experiment, b.Experiment)
	}
	if a.DurationS != b.DurationS || a.TargetRate != b.TargetRate {
		fmt.Fprintf(w, "NOTE: the runs differ in load: %g s at %g req/s against %g s at %g req/s\n", a.DurationS, a.TargetRate, b.DurationS, b.TargetRate)
	}
	for _, r := range []*Summary{a, b} {
		if r.Partial {
			fmt.Fprintf(w, "NOTE: %s is a partial run\n", describeRun(r))
		}
	}
	var names []string
	seen := map[string]bool{}
	for _, r := range []*Summary{a, b} {
		for _, s := range r.Strategies {
			if !seen[s.Name] {
				seen[s.Name] = true
				names = append(names, s.Name)
			}
		}
	}
	for _, name := range names {
		sa, okA := strategyNamed(a, name)
		sb, okB := strategyNamed(b, name)
		fmt.Fprintf(w, "\n%s\n", name)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  metric\tA\tB\tB − A\trelative")
		for _, m := range headline {
			va, vb := m.value(sa), m.value(sb)
			row := []string{"  " + m.name, cell(m, va, okA), cell(m, vb, okB), "", ""}
			if okA && okB {
				row[3] = diffCell(m, vb-va)
				row[4] = relCell(va, vb)
			}
			fmt.Fprintln(tw, strings.TrimRight(strings.Join(row, "\t"), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if okA && sa.GeneratorBehind || okB && sb.GeneratorBehind {
			fmt.Fprintln(w, "  GENERATOR BEHIND in a run: its numbers describe a lighter load")
		}
	}
	return nil
}

func describeRun(s *Summary) string {
	return fmt.Sprintf("%s, %s engine, %s backends, seed %d, started %s", s.Experiment, s.Engine, s.Backends, s.Seed, s.Started.Format("2006-01-02T15:04:05Z"))
}

func strategyNamed(s *Summary, name string) (Strategy, bool) {
	for _, st := range s.Strategies {
		if st.Name == name {
			return st, true
		}
	}
	return Strategy{}, false
}

func cell(m metric, v float64, ok bool) string {
	switch {
	case !ok:
		return "—"
	case m.percent:
		return fmt.Sprintf("%.2f%%", 100*v)
	default:
		return number(v)
	}
}

func diffCell(m metric, d float64) string {
	if m.percent {
		return fmt.Sprintf("%+.2f pp", 100*d)
	}
	if d == math.Trunc(d) && math.Abs(d) < 1e15 {
		return fmt.Sprintf("%+.0f", d)
	}
	return fmt.Sprintf("%+.3g", d)
}

func relCell(a, b float64) string {
	if a == 0 {
		if b == 0 {
			return "0%"
		}
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*(b-a)/math.Abs(a))
}

func number(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

package reports

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// compared are the metrics WriteComparison lists, in order.
var compared = []string{"requests", "achieved_rate", "faulty_share", "error_ratio", "timeout_ratio", "slow_ratio", "p50_ms", "p99_ms", "p999_ms", "ejections"}

// WriteComparison prints, per strategy, the compared metrics of two runs,
// by the names experiment files use, side by side with their differences
// (B − A): absolute, in the metric's unit (percentage points for ratios),
// and relative to A. Strategies are matched by name; one present in a
// single run is listed with the other side empty.
func WriteComparison(w io.Writer, a, b *Summary) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n", describeRun(a), describeRun(b))
	if a.Experiment != b.Experiment {
		fmt.Fprintf(w, "NOTE: the runs are of different experiments (%s, %s)\n", a.Experiment, b.Experiment)
	}
	if a.DurationS != b.DurationS || a.TargetRate != b.TargetRate {
		fmt.Fprintf(w, "NOTE: the runs differ in load: %g s at %g req/s against %g s at %g req/s\n", a.DurationS, a.TargetRate, b.DurationS, b.TargetRate)
	}
	if ga, gb := max(1, a.Generators), max(1, b.Generators); ga != gb {
		fmt.Fprintf(w, "NOTE: the runs had %d and %d load generators: a client-side strategy ran as that many independent balancers\n", ga, gb)
	}
	for _, r := range []*Summary{a, b} {
		if r.Partial {
			fmt.Fprintf(w, "NOTE: %s is a partial run\n", describeRun(r))
		}
		if r.Abort != nil {
			fmt.Fprintf(w, "NOTE: %s was aborted (%s): %s's numbers cover part of its attack, and the strategies after it were not run\n", describeRun(r), r.Abort.Text(), r.Abort.Strategy)
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
		for _, m := range mustMetrics(compared) {
			va, vb := m.Value(&sa), m.Value(&sb)
			row := []string{"  " + m.Name, runCell(m, va, okA), runCell(m, vb, okB), "", ""}
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
	gens := ""
	if s.Generators > 1 {
		gens = fmt.Sprintf(", %d generators", s.Generators)
	}
	when := "started " + cmp.Or(startedText(s), "unknown")
	if virtualTime(s) {
		when = "virtual time"
	}
	return fmt.Sprintf("%s, %s engine, %s backends%s, seed %d, %s", s.Experiment, s.Engine, s.Backends, gens, s.Seed, when)
}

func strategyNamed(s *Summary, name string) (Strategy, bool) {
	for _, st := range s.Strategies {
		if st.Name == name {
			return st, true
		}
	}
	return Strategy{}, false
}

// runCell is a run's value of m with its unit; "—" when the run lacks the
// strategy.
func runCell(m Metric, v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return m.Format(v)
}

// diffCell is a signed difference of m's values: percentage points for a
// ratio, else in m's unit.
func diffCell(m Metric, d float64) string {
	if m.Kind == KindRatio {
		return fmt.Sprintf("%+.2f pp", 100*d)
	}
	sign := "+"
	if d < 0 {
		sign = "-"
	}
	return sign + m.Format(math.Abs(d))
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

// Tolerance bounds how much worse a strategy's metric may get from one run
// to the next before WriteRegressions calls it a regression. A ratio
// (error, timeout, slow, faulty share; fractions) regresses when it gets
// worse by more than RatioPoints absolute and more than RatioRelative of its
// old value; p99 and p99.9 latency when they rise by more than LatencyMs
// and more than LatencyRelative; the achieved rate when it falls by more
// than RateRelative.
type Tolerance struct {
	RatioPoints     float64 // absolute, as a fraction: 0.01 is one percentage point
	RatioRelative   float64 // fraction of the old value
	LatencyMs       float64
	LatencyRelative float64
	RateRelative    float64
}

// DefaultTolerance: ratios +1 percentage point and +20%, p99 and p99.9 +5 ms
// and +20%, achieved rate −5%.
var DefaultTolerance = Tolerance{RatioPoints: 0.01, RatioRelative: 0.2, LatencyMs: 5, LatencyRelative: 0.2, RateRelative: 0.05}

// tolEps absorbs floating-point noise in a difference that equals its bound.
const tolEps = 1e-9

// regressionChecked are the metrics WriteRegressions compares. Which way
// is worse is the metric's Direction; the tolerance is the one of its Kind.
var regressionChecked = []string{"achieved_rate", "faulty_share", "error_ratio", "timeout_ratio", "slow_ratio", "p99_ms", "p999_ms"}

// beyond reports whether m got worse from a to b by more than t allows.
func (t Tolerance) beyond(m Metric, a, b float64) bool {
	worse := b - a
	if m.Better == HigherIsBetter {
		worse = a - b
	}
	switch m.Kind {
	case KindRatio:
		return worse > t.RatioPoints+tolEps && worse > t.RatioRelative*a+tolEps
	case KindMilliseconds:
		return worse > t.LatencyMs+tolEps && worse > t.LatencyRelative*a+tolEps
	case KindRate:
		return worse > t.RateRelative*a+tolEps
	}
	panic("reports: no tolerance for metric " + m.Name)
}

// WriteRegressions prints, after a blank line and a heading that states
// tol, the metrics of each strategy that got worse from run a (the
// reference, "A") to run b ("B") beyond tol, one line each starting with
// "REGRESSION", or "none"; it returns how many. A strategy in only one run
// is noted and not compared. The numbers are compared as they are: runs of
// different load, engine or length are compared all the same (see
// WriteComparison's notes).
func WriteRegressions(w io.Writer, a, b *Summary, tol Tolerance) (regressions int, err error) {
	fmt.Fprintf(w, "\nregressions of B against A (ratios beyond %+.3g pp and %+.3g%%, p99 and p99.9 beyond %+.3g ms and %+.3g%%, achieved rate beyond −%.3g%%):\n",
		100*tol.RatioPoints, 100*tol.RatioRelative, tol.LatencyMs, 100*tol.LatencyRelative, 100*tol.RateRelative)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var notes []string
	for _, sa := range a.Strategies {
		sb, ok := strategyNamed(b, sa.Name)
		if !ok {
			notes = append(notes, fmt.Sprintf("NOTE: %s is only in A; not compared", sa.Name))
			continue
		}
		for _, m := range mustMetrics(regressionChecked) {
			va, vb := m.Value(&sa), m.Value(&sb)
			if !tol.beyond(m, va, vb) {
				continue
			}
			regressions++
			fmt.Fprintf(tw, "REGRESSION\t%s\t%s\t%s → %s\t%s\t%s\n", sa.Name, m.Name, runCell(m, va, true), runCell(m, vb, true), diffCell(m, vb-va), relCell(va, vb))
		}
	}
	for _, sb := range b.Strategies {
		if _, ok := strategyNamed(a, sb.Name); !ok {
			notes = append(notes, fmt.Sprintf("NOTE: %s is only in B; not compared", sb.Name))
		}
	}
	if err := tw.Flush(); err != nil {
		return regressions, err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if regressions == 0 {
		_, err = fmt.Fprintln(w, "none")
	}
	return regressions, err
}

// WriteExpectations prints checked expectations: a count line, then one
// line per expectation, marked "passed", "FAILED" or "missing" (the run has
// no such strategy, or could not measure the metric). It writes nothing
// when results is empty.
func WriteExpectations(w io.Writer, results []ExpectationResult) error {
	if len(results) == 0 {
		return nil
	}
	var passed, failed, missing int
	for _, r := range results {
		switch {
		case r.Missing:
			missing++
		case r.Passed:
			passed++
		default:
			failed++
		}
	}
	fmt.Fprintf(w, "expectations: %d passed, %d failed", passed, failed)
	if missing > 0 {
		fmt.Fprintf(w, ", %d missing (strategy not run, or metric not measured)", missing)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range results {
		status, got := "FAILED", "got "+expectNumber(r.Got)
		switch {
		case r.Missing:
			status, got = "missing", "not measured"
		case r.Passed:
			status = "passed"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s %s %s\t%s\n", status, r.Strategy, r.Metric, r.Op, strconv.FormatFloat(r.Want, 'g', -1, 64), got)
	}
	return tw.Flush()
}

// expectNumber formats a measured value next to an expectation's bound:
// integers and values from 1000 up whole, others to four significant digits.
func expectNumber(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

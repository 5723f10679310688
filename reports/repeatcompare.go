package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// NoiseRule states, for outputs and documentation, when WriteRepeatedComparison
// and WriteGate call a change significant.
const NoiseRule = "a change counts only when the min–max ranges of the repetitions do not overlap " +
	"(every repetition of one run worse than every one of the other: the Mann–Whitney U test's U = 0, " +
	"which two samples of 3 from one distribution reach by chance 1 time in 20 in a given direction) " +
	"and the medians differ beyond the tolerance"

// Significance is how a metric of B compares with A's over the
// repetitions.
type Significance int

const (
	// WithinNoise: the ranges overlap, or the medians differ within the
	// tolerance.
	WithinNoise Significance = iota
	Worse
	Better
	// Unranked: the metric is neutral (requests, ejections), or a side
	// lacks it.
	Unranked
)

func (s Significance) String() string {
	switch s {
	case WithinNoise:
		return "~"
	case Worse:
		return "worse"
	case Better:
		return "better"
	}
	return ""
}

// Significant classifies the change of m from a to b: Worse (or Better)
// when every repetition of b is worse (better) than every one of a, their
// ranges not even touching, and the medians differ by more than tol
// allows. With one repetition a side the range test is a plain
// comparison, and this is the single-run rule of WriteRegressions.
func Significant(m Metric, a, b Spread, tol Tolerance) Significance {
	if m.Better == Neutral || len(a.Values) == 0 || len(b.Values) == 0 {
		return Unranked
	}
	lowBetter := m.Better == LowerIsBetter
	switch {
	case lowBetter && b.Min > a.Max || !lowBetter && b.Max < a.Min:
		if tol.beyond(m, a.Median, b.Median) {
			return Worse
		}
	case lowBetter && b.Max < a.Min || !lowBetter && b.Min > a.Max:
		if tol.beyond(m, b.Median, a.Median) {
			return Better
		}
	}
	return WithinNoise
}

// WriteRepeatedComparison prints, per strategy, each compared metric of a
// and b as median (min–max) over their repetitions, the difference of the
// medians (B − A) and whether the change is significant by the rule of
// Significant under tol. A single run is a repetition of one (Single).
func WriteRepeatedComparison(w io.Writer, a, b *Repeated, tol Tolerance) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n", a.describe(), b.describe())
	fmt.Fprintf(w, "medians with the range over the repetitions; %s\n", NoiseRule)
	if a.Experiment != b.Experiment {
		fmt.Fprintf(w, "NOTE: the runs are of different experiments (%s, %s)\n", a.Experiment, b.Experiment)
	}
	if a.DurationS != b.DurationS || a.TargetRate != b.TargetRate {
		fmt.Fprintf(w, "NOTE: the runs differ in load: %g s at %g req/s against %g s at %g req/s\n", a.DurationS, a.TargetRate, b.DurationS, b.TargetRate)
	}
	if min(len(a.Seeds), len(b.Seeds)) < 3 {
		fmt.Fprintf(w, "NOTE: %d and %d repetitions: with fewer than 3 a side, one noisy run can decide (lbchaos run --repeat 3)\n", len(a.Seeds), len(b.Seeds))
	}
	for _, r := range []*Repeated{a, b} {
		if r.Partial {
			fmt.Fprintf(w, "NOTE: %s is partial\n", r.describe())
		}
	}
	var names []string
	for _, r := range []*Repeated{a, b} {
		for _, st := range r.Strategies {
			if !slices.Contains(names, st.Name) {
				names = append(names, st.Name)
			}
		}
	}
	for _, name := range names {
		sa, okA := a.strategy(name)
		sb, okB := b.strategy(name)
		fmt.Fprintf(w, "\n%s\n", name)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  metric\tA\tB\tB − A\trelative\tchange")
		for _, m := range mustMetrics(compared) {
			pa, inA := sa.Metrics[m.Name]
			pb, inB := sb.Metrics[m.Name]
			row := []string{"  " + m.Name, "—", "—", "", "", ""}
			if okA && inA {
				row[1] = spreadCell(m, pa, true)
			}
			if okB && inB {
				row[2] = spreadCell(m, pb, true)
			}
			if okA && okB && inA && inB {
				row[3] = diffCell(m, pb.Median-pa.Median)
				row[4] = relCell(pa.Median, pb.Median)
				row[5] = Significant(m, pa, pb, tol).String()
			}
			fmt.Fprintln(tw, strings.TrimRight(strings.Join(row, "\t"), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// WriteGate prints, after a heading that states tol and the noise rule,
// one line per significant regression of b (the new run) against a (the
// reference), starting with "REGRESSION" and naming the experiment, the
// strategy and the metric, and one line per strategy of a that b lacks,
// starting with "MISSING"; or "none". It returns how many of each. A
// strategy only in b is noted, not counted.
func WriteGate(w io.Writer, a, b *Repeated, tol Tolerance) (regressions, missing int, err error) {
	fmt.Fprintf(w, "\nregressions of B against A (ratios beyond %+.3g pp and %+.3g%%, p99 and p99.9 beyond %+.3g ms and %+.3g%%, achieved rate beyond −%.3g%%; %s):\n",
		100*tol.RatioPoints, 100*tol.RatioRelative, tol.LatencyMs, 100*tol.LatencyRelative, 100*tol.RateRelative, NoiseRule)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, sa := range a.Strategies {
		sb, ok := b.strategy(sa.Name)
		if !ok {
			missing++
			fmt.Fprintf(tw, "MISSING\t%s\t%s\tin A, not in B: the new run did not measure it\n", b.Experiment, sa.Name)
			continue
		}
		for _, m := range mustMetrics(regressionChecked) {
			pa, inA := sa.Metrics[m.Name]
			pb, inB := sb.Metrics[m.Name]
			if !inA || !inB || Significant(m, pa, pb, tol) != Worse {
				continue
			}
			regressions++
			fmt.Fprintf(tw, "REGRESSION\t%s\t%s\t%s\t%s → %s\t%s\t%s\n", b.Experiment, sa.Name, m.Name,
				spreadCell(m, pa, true), spreadCell(m, pb, true), diffCell(m, pb.Median-pa.Median), relCell(pa.Median, pb.Median))
		}
	}
	if err := tw.Flush(); err != nil {
		return regressions, missing, err
	}
	for _, sb := range b.Strategies {
		if _, ok := a.strategy(sb.Name); !ok {
			fmt.Fprintf(w, "NOTE: %s is only in B; not compared\n", sb.Name)
		}
	}
	if regressions == 0 && missing == 0 {
		_, err = fmt.Fprintln(w, "none")
	}
	return regressions, missing, err
}

package reports

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// behindMarker flags a strategy whose load generator did not keep the target
// rate, so its latencies describe a lighter load than the experiment asked for.
const behindMarker = "<<< GENERATOR BEHIND"

// terminalColumns are the metrics of the terminal table, each with its
// compact heading.
var terminalColumns = []struct{ metric, head string }{
	{"requests", "REQUESTS"}, {"achieved_rate", "RATE/S"}, {"faulty_share", "FAULTY%"}, {"p50_ms", "P50MS"}, {"p99_ms", "P99MS"},
	{"slow_ratio", "SLOW%"}, {"error_ratio", "ERROR%"}, {"timeout_ratio", "TIMEOUT%"}, {"ejections", "EJECTIONS"},
}

// WriteTable writes the terminal comparison of s's strategies: a heading, one
// row per strategy (requests, achieved rate, faulty share, p50, p99, slow,
// error and timeout ratios, ejections), a GENERATOR BEHIND marker on rows
// whose generator fell behind, then one line per note. A strategy whose
// harness saturated is announced before anything else, then a partial run
// as PARTIAL RUN.
func WriteTable(w io.Writer, s *Summary) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	bw := bufio.NewWriter(w)
	for _, h := range harnessBanner(s) {
		fmt.Fprintln(bw, h)
	}
	if s.Partial {
		fmt.Fprintln(bw, "PARTIAL RUN: interrupted; numbers cover only what was measured before the interruption")
	}
	if b := abortBanner(s); b != "" {
		fmt.Fprintln(bw, b)
	}
	fmt.Fprintln(bw, heading(s))

	var rows bytes.Buffer
	tw := tabwriter.NewWriter(&rows, 0, 0, 2, ' ', 0)
	head := []string{"STRATEGY"}
	for _, c := range terminalColumns {
		h := c.head
		if m, _ := LookupMetric(c.metric); m.thresholdInHead && s.SlowThresholdMs > 0 {
			h += ">" + fmtNum(s.SlowThresholdMs) + "MS"
		}
		head = append(head, h)
	}
	fmt.Fprintln(tw, strings.Join(append(head, ""), "\t"))
	for i := range s.Strategies {
		st := &s.Strategies[i]
		row := []string{st.Name}
		for _, c := range terminalColumns {
			m, _ := LookupMetric(c.metric)
			row = append(row, textIn(m, s, st))
		}
		var flags []string
		if st.GeneratorBehind {
			flags = append(flags, behindMarker)
		}
		if st.Partial {
			flags = append(flags, "PARTIAL")
		}
		fmt.Fprintln(tw, strings.Join(append(row, strings.Join(flags, " ")), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(rows.String()) {
		fmt.Fprintln(bw, strings.TrimRight(line, " \n"))
	}
	if fair := fairFaultyShare(s); !math.IsNaN(fair) {
		fmt.Fprintf(bw, "fair share of faulty instance(s) %s: %s%%\n", fmtIDs(s.FaultyInstances), fmtPct(fair))
	}
	for _, n := range MergeNotes(s.Notes) {
		fmt.Fprintf(bw, "NOTE: %s\n", n)
	}
	return bw.Flush()
}

// heading is a one-line description of the run.
func heading(s *Summary) string {
	var b strings.Builder
	b.WriteString(s.Experiment)
	if s.Engine != "" || s.Backends != "" {
		fmt.Fprintf(&b, " (%s)", strings.Join(nonEmpty(s.Engine, s.Backends), ", "))
	}
	fmt.Fprintf(&b, ": %s s per strategy at %s req/s", fmtNum(s.DurationS), fmtNum(s.TargetRate))
	if n := instanceCount(s); n > 0 {
		fmt.Fprintf(&b, ", %d instances", n)
	}
	fmt.Fprintf(&b, ", seed %d", s.Seed)
	if virtualTime(s) {
		b.WriteString(", virtual time")
	}
	return b.String()
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

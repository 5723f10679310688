package reports

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Plot is one rendered figure, as RenderPlots returns it. PNG and SVG are
// file names relative to the report directory.
type Plot struct {
	Title    string
	PNG      string
	SVG      string
	Strategy string // the strategy shown, "" for plots across strategies
}

// WriteMarkdown writes report.md for s: the experiment's settings, its notes,
// the strategy comparison, one per-instance table per strategy and the given
// plots, which are linked (not embedded) by their file names.
func WriteMarkdown(w io.Writer, s *Summary, plots []Plot) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	bw := bufio.NewWriter(w)
	m := mdWriter{bw}

	title := "lbchaos report: " + s.Experiment
	if s.Partial {
		title += " (PARTIAL)"
	}
	m.p("# %s\n\n", mdText(title))
	if s.Partial {
		m.p("> **PARTIAL RUN.** The run was interrupted; every number below covers only what was measured before the interruption.\n\n")
	}
	if s.Description != "" {
		m.p("%s\n\n", mdText(s.Description))
	}
	if len(s.Notes) > 0 {
		m.p("## Notes: read these before the numbers\n\n")
		for _, n := range s.Notes {
			m.p("- **%s**\n", mdText(n))
		}
		m.p("\n")
	}

	m.settings(s)
	m.comparison(s, plots)
	m.howToRead(s)
	for i := range s.Strategies {
		m.strategy(s, &s.Strategies[i], plots)
	}
	return bw.Flush()
}

type mdWriter struct{ w *bufio.Writer }

func (m mdWriter) p(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

// row writes one Markdown table row; cells are escaped.
func (m mdWriter) row(cells ...string) {
	m.w.WriteString("|")
	for _, c := range cells {
		m.w.WriteString(" ")
		m.w.WriteString(strings.ReplaceAll(mdText(c), "|", `\|`))
		m.w.WriteString(" |")
	}
	m.w.WriteString("\n")
}

// rule writes a table's header separator; align holds "l" or "r" per column.
func (m mdWriter) rule(align string) {
	m.w.WriteString("|")
	for _, a := range align {
		if a == 'r' {
			m.w.WriteString(" ---: |")
		} else {
			m.w.WriteString(" --- |")
		}
	}
	m.w.WriteString("\n")
}

func (m mdWriter) settings(s *Summary) {
	m.p("## Settings\n\n")
	m.row("setting", "value")
	m.rule("ll")
	kv := func(k, v string) {
		if v != "" {
			m.row(k, v)
		}
	}
	if n := instanceCount(s); n > 0 {
		kv("instances", strconv.Itoa(n))
	}
	kv("workers per instance", fmtWorkers(s.Workers))
	kv("service time", s.Service)
	kv("arrivals", s.Arrival)
	kv("target rate", fmtNum(s.TargetRate)+" req/s")
	kv("duration per strategy", fmtNum(s.DurationS)+" s")
	if s.TimeoutMs > 0 {
		kv("request timeout", fmtNum(s.TimeoutMs)+" ms")
	}
	kv("slow threshold", fmtNum(s.SlowThresholdMs)+" ms")
	kv("seed", strconv.FormatUint(s.Seed, 10))
	kv("engine", s.Engine)
	kv("backends", s.Backends)
	if len(s.Faults) == 0 {
		kv("faults", "none")
	}
	for i, f := range s.Faults {
		k := ""
		if i == 0 {
			k = "faults"
		}
		m.row(k, fmtFault(f))
	}
	if len(s.FaultyInstances) > 0 {
		kv("faulty instances", fmtIDs(s.FaultyInstances))
	}
	if !s.Started.IsZero() {
		kv("started", s.Started.UTC().Format(time.RFC3339))
	}
	env := nonEmpty(s.GoVersion)
	if s.CPUs > 0 {
		env = append(env, strconv.Itoa(s.CPUs)+" CPUs")
	}
	kv("environment", strings.Join(env, ", "))
	kv("lbchaos version", s.Version)
	m.p("\n")
}

func (m mdWriter) comparison(s *Summary, plots []Plot) {
	m.p("## Comparison of strategies\n\n")
	slow := "slow %"
	if s.SlowThresholdMs > 0 {
		slow = "slow % (> " + fmtNum(s.SlowThresholdMs) + " ms)"
	}
	m.row("strategy", "faulty share %", "p50 ms", "p99 ms", slow, "error %", "timeout %", "ejections", "requests", "achieved rate req/s")
	m.rule("lrrrrrrrrr")
	for i := range s.Strategies {
		st := &s.Strategies[i]
		faulty := "-"
		if len(s.FaultyInstances) > 0 {
			faulty = fmtPct(st.FaultyShare)
		}
		rate := fmtNum(st.AchievedRate)
		if st.GeneratorBehind {
			rate = "**" + rate + " GENERATOR BEHIND**"
		}
		name := st.Name
		if st.Partial {
			name += " (partial)"
		}
		m.row(name, faulty, fmtMs(st.LatencyMs.P50), fmtMs(st.LatencyMs.P99), fmtPct(st.SlowRatio),
			fmtPct(st.ErrorRatio), fmtPct(st.TimeoutRatio), strconv.Itoa(st.Ejections),
			strconv.FormatInt(st.Requests, 10), rate)
	}
	m.p("\n")
	if fair := fairFaultyShare(s); !math.IsNaN(fair) {
		m.p("Fair share of the faulty instance(s) (%s): %s%% of requests.\n\n", fmtIDs(s.FaultyInstances), fmtPct(fair))
	}
	if cols, rows := scenarioTable(s); cols != nil {
		m.p("### Scenario metrics\n\n")
		head := []string{"strategy"}
		align := "l"
		for _, c := range cols {
			head = append(head, c.head)
			align += "r"
		}
		m.row(head...)
		m.rule(align)
		for _, r := range rows {
			m.row(r...)
		}
		m.p("\n")
		for _, c := range cols {
			m.p("- %s: %s.\n", c.head, c.title)
		}
		m.p("\n")
	}
	m.plots(plots, "")
}

func (m mdWriter) howToRead(s *Summary) {
	m.p("## How to read this\n\n")
	n := instanceCount(s)
	fair := "1/N"
	if n > 0 {
		fair = fmt.Sprintf("1/%d = %s%%", n, fmtPct(1/float64(n)))
	}
	m.p("%s", "Every latency counts every request, failed ones included; a timeout counts as its timeout. "+
		"p50 is the typical request and hides a tail: compare p99 and the slow share before calling a strategy good. "+
		"A fast failure lowers latency, so read the error ratio beside it. "+
		"Under an even split each instance gets "+fair+" of the requests; "+
		"a faulty share well above that means the strategy favours the faulty instance, well below means it avoids it. "+
		"A strategy marked GENERATOR BEHIND was offered less load than the target, so its numbers describe a lighter load.\n\n")
}

func (m mdWriter) strategy(s *Summary, st *Strategy, plots []Plot) {
	m.p("## Strategy: %s\n\n", mdText(st.Name))
	var facts []string
	if st.Partial {
		facts = append(facts, "**partial: interrupted before the end**")
	}
	facts = append(facts, fmt.Sprintf("%d requests in %s s (%s req/s)", st.Requests, fmtNum(st.ElapsedS), fmtNum(st.AchievedRate)))
	if st.GeneratorBehind {
		facts = append(facts, fmt.Sprintf("**GENERATOR BEHIND**: send lag p50 %s ms, p99 %s ms, max %s ms",
			fmtMs(st.SendLagMs.P50), fmtMs(st.SendLagMs.P99), fmtMs(st.SendLagMs.Max)))
	}
	facts = append(facts, fmt.Sprintf("latency ms: mean %s, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s",
		fmtMs(st.LatencyMs.Mean), fmtMs(st.LatencyMs.P50), fmtMs(st.LatencyMs.P90),
		fmtMs(st.LatencyMs.P99), fmtMs(st.LatencyMs.P999), fmtMs(st.LatencyMs.Max)))
	if st.Unattributed > 0 {
		facts = append(facts, fmt.Sprintf("%d requests never reached an instance", st.Unattributed))
	}
	if len(st.Events) > 0 {
		ej, re := eventCounts(st.Events)
		facts = append(facts, fmt.Sprintf("%d ejection and %d re-admission events", ej, re))
	}
	for _, f := range facts {
		m.p("- %s\n", f)
	}
	m.p("\n")

	if len(st.Instances) > 0 {
		m.row("instance", "faulty", "requests", "share %", "errors", "error %", "p50 ms", "p99 ms", "max ms")
		m.rule("rlrrrrrrr")
		for _, in := range st.Instances {
			faulty := ""
			if in.Faulty {
				faulty = "**faulty**"
			}
			m.row(strconv.Itoa(in.ID), faulty, strconv.FormatInt(in.Requests, 10), fmtPct(in.Share),
				strconv.FormatInt(in.Errors, 10), fmtPct(in.ErrorRatio),
				fmtMs(in.LatencyMs.P50), fmtMs(in.LatencyMs.P99), fmtMs(in.LatencyMs.Max))
		}
		m.p("\n")
	}
	m.plots(plots, st.Name)
}

// plots links the plots of one strategy ("" for cross-strategy plots).
func (m mdWriter) plots(plots []Plot, strategy string) {
	for _, p := range plots {
		if p.Strategy != strategy {
			continue
		}
		if p.PNG != "" {
			m.p("![%s](%s)\n", mdAlt(p.Title), p.PNG)
		}
		if p.SVG != "" {
			m.p("[%s (SVG)](%s)\n", mdText(p.Title), p.SVG)
		}
		m.p("\n")
	}
}

// mdText keeps free text on one line so it cannot break a table or list.
func mdText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// mdAlt makes s safe as image alt text.
func mdAlt(s string) string {
	return strings.NewReplacer("[", "(", "]", ")").Replace(mdText(s))
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

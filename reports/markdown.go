package reports

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
)

// Plot is one rendered figure, as RenderPlots returns it. PNG and SVG are
// file names relative to the report directory.
type Plot struct {
	Title    string
	PNG      string
	SVG      string
	Strategy string // the strategy shown, "" for plots across strategies
}

// WriteMarkdown writes report.md for s: the sections of report.html (a
// line per strategy whose harness saturated, the verdict, the notes, the
// expectations, the comparison of strategies, what the strategies of the
// run are, the plots across strategies, one section per strategy
// (collapsed), the settings and the environment), in the same order and
// with the same rows. The plots are
// linked, not embedded, by their file names.
func WriteMarkdown(w io.Writer, s *Summary, plots []Plot) error {
	return WriteMarkdownAt(w, s, plots, "")
}

// WriteMarkdownAt is WriteMarkdown with the plots embedded as images from
// plotsURL, the address the run's folder is published at (a CI
// artifact's, a Pages site's). Without one the plots are links to the
// files beside report.md, and the report says so: a relative image pasted
// into a pull-request comment or a job summary would be a broken image.
func WriteMarkdownAt(w io.Writer, s *Summary, plots []Plot, plotsURL string) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	v := newView(s, plots)
	bw := bufio.NewWriter(w)
	m := mdWriter{w: bw, plotsURL: strings.TrimSuffix(plotsURL, "/")}

	m.p("# %s\n\n", mdText(v.Title))
	m.p("%s\n\n", mdText(v.Subtitle))
	for _, h := range v.Harness {
		m.p("> **%s**\n\n", mdText(h))
	}
	if v.Partial != "" {
		m.p("> **%s**\n\n", mdText(v.Partial))
	}
	if b := abortBanner(s); b != "" {
		m.p("> **%s**\n\n", mdText(b))
	}
	if v.Description != "" {
		m.p("%s\n\n", mdText(v.Description))
	}
	m.verdict(v.Verdict)
	if len(v.Notes) > 0 {
		m.p("## Notes: read these before the numbers\n\n")
		for _, n := range v.Notes {
			m.p("- **%s**\n", mdText(n))
		}
		m.p("\n")
	}
	m.expectations(v.Expectations)

	m.p("## Comparison of strategies\n\n")
	m.table(v.Comparison)
	if v.FairShare != "" {
		m.p("%s\n\n", mdText(v.FairShare))
	}
	if v.Scenario != nil {
		m.p("### Scenario metrics\n\n")
		m.table(*v.Scenario)
	}
	if v.Tiers != nil {
		m.p("### Tiers\n\n%s\n\n", mdText(v.TiersNote))
		m.table(*v.Tiers)
	}
	if v.Zones != nil {
		m.p("### Zones\n\n%s\n\n", mdText(v.ZonesNote))
		m.table(*v.Zones)
	}
	if v.Rotation != nil {
		m.p("### Out of rotation\n\n%s\n\n", mdText(v.RotationNote))
		m.table(*v.Rotation)
	}
	if v.SimVsReal != nil {
		m.p("### Sim vs real\n\n%s\n\n", mdText(v.SimVsRealNote))
		m.table(*v.SimVsReal)
	}
	m.p("## How to read this\n\n")
	for _, p := range v.HowToRead {
		m.p("%s\n\n", mdText(p))
	}
	if len(v.Glossary) > 0 {
		for _, g := range v.Glossary {
			m.p("- **%s**: %s\n", mdText(g.Key), mdText(g.Value))
		}
		m.p("\n")
	}
	if len(v.Terms) > 0 {
		m.p("### Strategies in this run\n\n")
		for _, g := range v.Terms {
			m.p("- `%s`: %s\n", mdText(g.Key), mdText(g.Value))
		}
		m.p("\n")
	}
	if len(v.Plots) > 0 {
		m.p("## Across strategies\n\n")
		if m.plotsURL == "" {
			m.p("The plots are the PNG and SVG files in this run's folder, beside report.md (report.html shows them all). They are linked, not embedded, so that this report stays whole when pasted into a pull request or a CI job summary; `lbchaos report RUN --plots-url URL` embeds them from where the folder is published.\n\n")
		}
		m.plots(v.Plots)
	}
	for _, sv := range v.Strategies {
		m.strategy(v, sv)
	}
	m.rows("Settings", "setting", v.Settings)
	m.rows("Environment", "environment", v.Environment)
	return bw.Flush()
}

type mdWriter struct {
	w        *bufio.Writer
	plotsURL string // where the plots are published; "" links the files
}

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

// align is the rule's alignment string for columns.
func align(cols []column) string {
	var b strings.Builder
	for _, c := range cols {
		if c.Num {
			b.WriteByte('r')
		} else {
			b.WriteByte('l')
		}
	}
	return b.String()
}

func (m mdWriter) verdict(v verdictView) {
	m.p("## Verdict\n\n")
	m.p("Key metric: `%s`, %s. %s\n\n", v.Metric, mdText(v.Label), mdText(v.Definition))
	switch {
	case v.None:
		m.p("No strategy has a value for %s.\n\n", mdText(v.Label))
	case v.Single && v.SomeNotRanked:
		m.p("Only **%s** is ranked: %s %s.\n\n", mdText(v.Best.Strategy), mdText(v.Label), v.Best.Value)
	case v.Single:
		m.p("Only **%s** was measured: %s %s.\n\n", mdText(v.Best.Strategy), mdText(v.Label), v.Best.Value)
	case v.Tied && v.SomeNotRanked:
		m.p("All ranked strategies tie on %s at %s.\n\n", mdText(v.Label), v.Best.Value)
	case v.Tied:
		m.p("All strategies tie on %s at %s.\n\n", mdText(v.Label), v.Best.Value)
	default:
		m.p("Best on %s: **%s** at %s. Worst: **%s** at %s, %s.\n\n", mdText(v.Label),
			mdText(v.Best.Strategy), v.Best.Value, mdText(v.Worst.Strategy), v.Worst.Value, v.Margin)
	}
	if len(v.Ranking) > 1 {
		m.row("rank", "strategy", v.Head)
		m.rule("rlr")
		for _, r := range v.Ranking {
			value := r.Value
			if r.Mark != "" {
				value += " (" + r.Mark + ")"
			}
			m.row(strconv.Itoa(r.Place), r.Strategy+mdBadges(r.Flags), value)
		}
		m.p("\n")
	}
	for _, c := range v.Caveats {
		m.p("- %s\n", mdText(c))
	}
	if len(v.Caveats) > 0 {
		m.p("\n")
	}
}

func (m mdWriter) expectations(e *expectationsView) {
	if e == nil {
		return
	}
	m.p("## Expectations\n\n")
	m.p("%d passed, %d FAILED, %d missing\n\n", e.Passed, e.Failed, e.Missing)
	m.row("result", "strategy", "expectation", "got")
	m.rule("lllr")
	for _, r := range e.Rows {
		status := r.Status
		if r.State == "failed" {
			status = "**" + status + "**"
		}
		m.row(status, r.Strategy, "`"+r.Check+"`", r.Got)
	}
	m.p("\n")
}

// table writes t with a note on the key metric's column and its best and
// worst cells, and badges after the value they flag.
func (m mdWriter) table(t table) {
	head := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Head
		if c.Key {
			head[i] += " (key)"
		}
	}
	m.row(head...)
	m.rule(align(t.Columns))
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = c.Text + mdBadges(c.Badges)
			if c.Mark != "" {
				cells[i] += " (" + c.Mark + ")"
			}
		}
		m.row(cells...)
	}
	m.p("\n")
}

// mdBadges writes flags after a value: " **(partial, generator behind)**".
func mdBadges(flags []string) string {
	if len(flags) == 0 {
		return ""
	}
	return " **(" + strings.Join(flags, ", ") + ")**"
}

func (m mdWriter) strategy(v *view, sv strategyView) {
	// Collapsed (GitHub renders <details>), so that a pull request comment
	// or a step summary opens on the verdict and the comparison. The blank
	// line after <summary> lets the Markdown inside render.
	badges := ""
	if len(sv.Flags) > 0 {
		badges = " <b>(" + htmlText(strings.Join(sv.Flags, ", ")) + ")</b>"
	}
	m.p("<details><summary><b>Strategy: %s</b>%s: %s</summary>\n\n", htmlText(sv.Name), badges, htmlText(sv.Summary))
	for _, f := range sv.Facts {
		m.p("- %s\n", mdText(f))
	}
	m.p("\n")
	m.incidents(sv.Incidents)
	if len(sv.Instances) > 0 {
		head := make([]string, len(v.InstanceColumns))
		for i, c := range v.InstanceColumns {
			head[i] = c.Head
		}
		m.row(head...)
		m.rule(align(v.InstanceColumns))
		for _, in := range sv.Instances {
			status := ""
			if in.Faulty {
				status = "**faulty**"
			}
			m.row(append([]string{strconv.Itoa(in.ID), status}, in.Cells...)...)
		}
		m.p("\n")
	}
	m.plots(sv.Plots)
	m.p("</details>\n\n")
}

// htmlText is s on one line, escaped for the HTML of a <summary>.
func htmlText(s string) string {
	return html.EscapeString(mdText(s))
}

// rows writes a section of labelled rows as a two-column table.
func (m mdWriter) rows(title, what string, rows []row) {
	if len(rows) == 0 {
		return
	}
	m.p("## %s\n\n", title)
	m.row(what, "value")
	m.rule("ll")
	for _, r := range rows {
		m.row(r.Key, r.Value)
	}
	m.p("\n")
}

// plots writes plots: with a plots URL the PNG as an image from there
// and the SVG beside it; without, a link to each file.
func (m mdWriter) plots(plots []Plot) {
	if m.plotsURL == "" {
		for _, p := range plots {
			var links []string
			if p.PNG != "" {
				links = append(links, fmt.Sprintf("[%s](%s)", mdText(p.Title), p.PNG))
			}
			if p.SVG != "" {
				links = append(links, fmt.Sprintf("[SVG](%s)", p.SVG))
			}
			if len(links) > 0 {
				m.p("- %s\n", strings.Join(links, " · "))
			}
		}
		m.p("\n")
		return
	}
	for _, p := range plots {
		if p.PNG != "" {
			m.p("![%s](%s/%s)\n", mdAlt(p.Title), m.plotsURL, p.PNG)
		}
		if p.SVG != "" {
			m.p("[%s (SVG)](%s/%s)\n", mdText(p.Title), m.plotsURL, p.SVG)
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

package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lbchaos/lbchaos/reports"
)

// Files a sweep writes into its folder.
const (
	JSONFile     = "sweep.json"
	CSVFile      = "sweep.csv"
	MarkdownFile = "sweep.md"
)

// csvMetrics are the figures sweep.csv and sweep.md give, after the key
// metric.
var csvMetrics = []string{"error_ratio", "timeout_ratio", "p50_ms", "p99_ms", "faulty_share", "achieved_rate"}

// columns are the metrics of the tables: the key metric, then csvMetrics.
func (r *Result) columns() []string {
	cols := []string{r.KeyMetric}
	for _, m := range csvMetrics {
		if m != r.KeyMetric {
			cols = append(cols, m)
		}
	}
	return cols
}

// write writes sweep.json, sweep.csv and sweep.md into dir.
func write(dir string, r *Result) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, JSONFile), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var c bytes.Buffer
	if err := writeCSV(&c, r); err != nil {
		return err
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, CSVFile), c.Bytes(), 0o644); err != nil {
		return err
	}
	files, err := plots(dir, r)
	if err != nil {
		return err
	}
	md := Markdown(r)
	if len(files) > 0 {
		md += "\n### Plots\n\n"
		for _, f := range files {
			md += fmt.Sprintf("![%s](%s)\n", strings.TrimSuffix(strings.TrimPrefix(f, "sweep-"), ".png"), f)
		}
	}
	return reports.WriteFileAtomic(filepath.Join(dir, MarkdownFile), []byte(md), 0o644)
}

// writeCSV writes one row per point and strategy: the parameters, the
// strategy, the runs, each column's median, lowest and highest, and
// whether an abort stopped (or skipped) the strategy there.
func writeCSV(w *bytes.Buffer, r *Result) error {
	cw := csv.NewWriter(w)
	head := []string{"point"}
	for _, d := range r.Dims {
		head = append(head, d.Name)
	}
	head = append(head, "strategy", "runs")
	cols := r.columns()
	for _, m := range cols {
		head = append(head, m, m+"_min", m+"_max")
	}
	head = append(head, "aborted")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, p := range r.Points {
		for _, f := range p.Strategies {
			row := []string{strconv.Itoa(p.ID)}
			for _, d := range r.Dims {
				row = append(row, p.Params[d.Name])
			}
			row = append(row, f.Name, strconv.Itoa(p.Runs))
			for _, m := range cols {
				row = append(row, num(f.Median, m), num(f.Min, m), num(f.Max, m))
			}
			row = append(row, strconv.FormatBool(f.Aborted))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func num(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// Markdown is the sweep as a pull-request comment: a table of each point's
// key figures per strategy (medians, the spread in brackets), and the
// knees.
func Markdown(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Sweep of %s (%s engine)\n\n", r.Experiment, r.Engine)
	var dims []string
	for _, d := range r.Dims {
		dims = append(dims, fmt.Sprintf("`%s` (%d values)", d.Name, len(d.Values)))
	}
	fmt.Fprintf(&b, "%d points over %s, %d run(s) each", len(r.Points), strings.Join(dims, " × "), r.Repeat)
	if r.Repeat > 1 {
		b.WriteString(" (medians; the range of the runs in brackets)")
	}
	b.WriteString(".")
	if r.Partial {
		b.WriteString(" **Partial:** the sweep was interrupted; points without runs are left out (`--resume` runs them).")
	}
	b.WriteString("\n\n")
	cols := r.columns()
	confirmed := r.confirmed()
	b.WriteString("| point |")
	for _, d := range r.Dims {
		fmt.Fprintf(&b, " %s |", d.Name)
	}
	b.WriteString(" strategy |")
	for _, m := range cols {
		fmt.Fprintf(&b, " %s |", head(m))
	}
	if confirmed {
		fmt.Fprintf(&b, " real %s |", head(r.KeyMetric))
	}
	b.WriteString("\n| ---: |")
	b.WriteString(strings.Repeat(" --- |", len(r.Dims)+1))
	b.WriteString(strings.Repeat(" ---: |", len(cols)))
	if confirmed {
		b.WriteString(" ---: |")
	}
	b.WriteString("\n")
	for _, p := range r.Points {
		for _, f := range p.Strategies {
			fmt.Fprintf(&b, "| %d |", p.ID)
			for _, d := range r.Dims {
				fmt.Fprintf(&b, " %s |", p.Params[d.Name])
			}
			if f.Aborted {
				fmt.Fprintf(&b, " `%s` (aborted) |", f.Name)
			} else {
				fmt.Fprintf(&b, " `%s` |", f.Name)
			}
			for _, m := range cols {
				fmt.Fprintf(&b, " %s |", cell(f, m, r.Repeat > 1))
			}
			if confirmed {
				real := "—"
				if v, ok := f.Real[r.KeyMetric]; ok {
					real = format(r.KeyMetric, v)
				}
				fmt.Fprintf(&b, " %s |", real)
			}
			b.WriteString("\n")
		}
	}
	var aborted []string
	for _, p := range r.Points {
		if p.Aborted != "" {
			aborted = append(aborted, fmt.Sprintf("- point %d: %s", p.ID, p.Aborted))
		}
	}
	if len(aborted) > 0 {
		b.WriteString("\nAn abort condition of the experiment tripped at these points; a strategy it stopped or skipped (marked aborted) fails the bound there:\n\n")
		b.WriteString(strings.Join(aborted, "\n") + "\n")
	}
	if len(r.Knees) > 0 {
		fmt.Fprintf(&b, "\n### Knees (%s)\n\n", r.Bound)
		if r.Partial {
			b.WriteString("The sweep is partial: a knee *at least* there stopped at a rate not run yet.\n\n")
		}
		for _, s := range CapacitySentences(r) {
			b.WriteString("- " + s + "\n")
		}
	}
	return b.String()
}

// head is a metric's column head.
func head(m string) string {
	if mt, ok := reports.LookupMetric(m); ok && mt.Head != "" {
		return mt.Head
	}
	return m
}

// cell is metric m of f as the tables show it: a ratio as a percentage.
func cell(f Figures, m string, spread bool) string {
	v, ok := f.Median[m]
	if !ok {
		return "—"
	}
	s := format(m, v)
	if spread && f.Min[m] != f.Max[m] {
		s += " [" + format(m, f.Min[m]) + "–" + format(m, f.Max[m]) + "]"
	}
	return s
}

func format(m string, v float64) string {
	if mt, ok := reports.LookupMetric(m); ok && mt.Kind == reports.KindRatio {
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// CapacitySentences says each strategy's knee, and, when the sweep turns
// the faults on and off, how much capacity the fault costs it: "round-robin
// loses 40% of its capacity to the fault (knee 3000 req/s, 5000 without)".
func CapacitySentences(r *Result) []string {
	var out []string
	type pair struct{ on, off *Knee }
	byStrategy := map[string]*pair{}
	var order []string
	for i := range r.Knees {
		k := &r.Knees[i]
		group := groupText(k.Group, "faults")
		out = append(out, fmt.Sprintf("`%s`%s: %s", k.Strategy, group, kneeText(k)))
		f, ok := k.Group["faults"]
		if !ok || len(k.Group) != 1 {
			continue
		}
		p := byStrategy[k.Strategy]
		if p == nil {
			p = &pair{}
			byStrategy[k.Strategy] = p
			order = append(order, k.Strategy)
		}
		if f == "on" {
			p.on = k
		} else {
			p.off = k
		}
	}
	for _, name := range order {
		p := byStrategy[name]
		if p.on == nil || p.off == nil || p.off.Rate == nil || p.off.Beyond || p.on.Beyond || p.on.Partial || p.off.Partial {
			continue
		}
		off := *p.off.Rate
		if p.on.Rate == nil {
			out = append(out, fmt.Sprintf("`%s` keeps the bound at no rate swept with the fault, and up to %s req/s without it.", name, FormatNumber(off)))
			continue
		}
		on := *p.on.Rate
		knees := fmt.Sprintf("(knee %s req/s with it, %s without)", FormatNumber(on), FormatNumber(off))
		switch pct := math.Round(100 * (1 - on/off)); {
		case pct > 0:
			out = append(out, fmt.Sprintf("`%s` loses %s%% of its capacity to the fault %s.", name, FormatNumber(pct), knees))
		case pct < 0:
			out = append(out, fmt.Sprintf("`%s` gains %s%% of capacity with the fault %s.", name, FormatNumber(-pct), knees))
		default:
			out = append(out, fmt.Sprintf("`%s` loses no capacity to the fault %s.", name, knees))
		}
	}
	return out
}

func groupText(g map[string]string, first string) string {
	if len(g) == 0 {
		return ""
	}
	var parts []string
	if v, ok := g[first]; ok {
		parts = append(parts, first+"="+v)
	}
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if k != first {
			parts = append(parts, k+"="+g[k])
		}
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func kneeText(k *Knee) string {
	switch {
	case k.Partial && k.Rate == nil:
		return "not measured yet at the lowest rate (partial sweep)"
	case k.Partial:
		return fmt.Sprintf("knee at least %s req/s (the next rate is not measured yet)", FormatNumber(*k.Rate))
	case k.Rate == nil:
		return "over the bound already at the lowest rate"
	case k.Beyond:
		return fmt.Sprintf("within the bound at every rate swept, up to %s req/s", FormatNumber(*k.Rate))
	}
	return fmt.Sprintf("knee at %s req/s", FormatNumber(*k.Rate))
}

// confirmed reports whether a point of r was run on real backends too.
func (r *Result) confirmed() bool {
	for _, p := range r.Points {
		for _, f := range p.Strategies {
			if len(f.Real) > 0 {
				return true
			}
		}
	}
	return false
}

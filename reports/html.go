package reports

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// WriteHTML writes report.html for s: a self-contained page that opens with
// the verdict (the best and worst strategy on s.KeyMetric and the margin
// between them), then the notes that weaken the measurement, the checked
// expectations, the comparison of strategies, the plots across strategies,
// one section per strategy (its plots and per-instance table), the settings,
// the environment and the experiment file.
//
// Plots are read from fsys by their file names and embedded: the SVG inline,
// or, for a plot without an SVG, the PNG as a data: URI. A nil fsys leaves
// the plots out. The page loads nothing else: no scripts, no external
// styles, fonts or images. Every string from s is HTML-escaped.
func WriteHTML(w io.Writer, s *Summary, plots []Plot, fsys fs.FS) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	page, err := newHTMLPage(s, plots, fsys)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if err := htmlTemplate.Execute(bw, page); err != nil {
		return fmt.Errorf("reports: rendering HTML: %w", err)
	}
	return bw.Flush()
}

// htmlPage is what the template renders; every string in it is escaped by
// the template, except the typed HTML, URL and CSS values made here.
type htmlPage struct {
	Title       string
	Experiment  string
	Description string
	Subtitle    string
	Partial     bool
	Verdict     htmlVerdict
	Warnings    []string
	Expect      *htmlExpectations
	Columns     []htmlColumn
	Rows        [][]htmlCell
	FairShare   string
	// ScenarioColumns and ScenarioRows are the scenario metrics the run
	// measured (see scenarioTable); empty when none.
	ScenarioColumns []htmlColumn
	ScenarioRows    [][]htmlCell
	HowToRead       []string
	CrossPlots      []htmlPlot
	Strategies      []htmlStrategy
	Settings        []kv
	Environment     []kv
	File            string
	Version         string
}

type kv struct{ Key, Value string }

type htmlVerdict struct {
	Metric     string // e.g. "bad_ratio"
	Label      string // e.g. "bad requests (failed or slow)"
	Definition string
	Best       string
	BestValue  string
	Worst      string
	WorstValue string
	Margin     string
	Single     bool // one strategy ranked
	Tied       bool
	None       bool // nothing ranked
	Caveats    []string
	Ranking    []htmlRank
}

type htmlRank struct {
	Place    int
	Strategy string
	Value    string
	BarPct   float64 // bar length, percent of the worst value
	Class    string  // "best", "worst" or ""
	Flags    []string
}

type htmlExpectations struct {
	Passed, Failed, Missing int
	Rows                    []htmlExpectation
}

type htmlExpectation struct {
	Status, Class string
	Strategy      string
	Check         string
	Got           string
}

type htmlColumn struct {
	Head  string
	Num   bool
	Key   bool
	Title string
}

type htmlCell struct {
	Text  string
	Class string
	Badge string
}

// Parts is the cell's text split after the punctuation of strategy names
// ("+", ",", "(", "/"), where a narrow column may break the line.
func (c htmlCell) Parts() []string {
	var parts []string
	rest := c.Text
	for {
		i := strings.IndexAny(rest, "+,(/")
		if i < 0 || i == len(rest)-1 {
			return append(parts, rest)
		}
		parts = append(parts, rest[:i+1])
		rest = rest[i+1:]
	}
}

type htmlPlot struct {
	Title string
	SVG   template.HTML
	PNG   template.URL
}

type htmlStrategy struct {
	Anchor    string
	Name      string
	Summary   string
	Flags     []string
	Facts     []string
	Instances []htmlInstance
	Plots     []htmlPlot
}

type htmlInstance struct {
	ID       int
	Swatch   template.CSS
	Faulty   bool
	Requests int64
	Share    string
	Errors   int64
	ErrorPct string
	Timeouts int64
	Slow     int64
	P50, P99 string
	Max      string
}

func newHTMLPage(s *Summary, plots []Plot, fsys fs.FS) (*htmlPage, error) {
	pg := &htmlPage{
		Experiment:  s.Experiment,
		Description: s.Description,
		Partial:     s.Partial,
		Version:     s.Version,
	}
	pg.Title = "lbchaos report: " + s.Experiment
	if s.Partial {
		pg.Title += " (PARTIAL)"
	}
	pg.Subtitle = heading(s)
	if !s.Started.IsZero() {
		pg.Subtitle += ", started " + s.Started.UTC().Format(time.RFC3339)
	}
	pg.Verdict = newHTMLVerdict(s)
	pg.Warnings = warnings(s)
	pg.Expect = newHTMLExpectations(s)
	pg.Columns, pg.Rows = comparisonTable(s)
	if fair := fairFaultyShare(s); !math.IsNaN(fair) {
		pg.FairShare = fmt.Sprintf("Fair share of the faulty instance(s) (%s): %s%% of requests.", fmtIDs(s.FaultyInstances), fmtPct(fair))
	}
	pg.HowToRead = howToRead(s)
	if cols, rows := scenarioTable(s); cols != nil {
		pg.ScenarioColumns = []htmlColumn{{Head: "strategy"}}
		for _, c := range cols {
			pg.ScenarioColumns = append(pg.ScenarioColumns, htmlColumn{Head: c.head, Num: true, Title: c.title})
		}
		for _, r := range rows {
			row := []htmlCell{{Text: r[0], Class: "name"}}
			for _, v := range r[1:] {
				row = append(row, htmlCell{Text: v, Class: "num"})
			}
			pg.ScenarioRows = append(pg.ScenarioRows, row)
		}
	}

	byStrategy := map[string][]htmlPlot{}
	if fsys != nil {
		for _, p := range plots {
			hp, err := embedPlot(fsys, p)
			if err != nil {
				return nil, err
			}
			if p.Strategy == "" {
				pg.CrossPlots = append(pg.CrossPlots, hp)
			} else {
				byStrategy[p.Strategy] = append(byStrategy[p.Strategy], hp)
			}
		}
	}
	used := map[string]bool{}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		hs := newHTMLStrategy(s, st, uniqueSlug("s-"+Slug(st.Name), used))
		hs.Plots = byStrategy[st.Name]
		delete(byStrategy, st.Name) // two strategies of one name: plots go to the first
		pg.Strategies = append(pg.Strategies, hs)
	}
	pg.Settings, pg.Environment = settings(s)
	pg.File = s.ExperimentFile
	return pg, nil
}

func newHTMLVerdict(s *Summary) htmlVerdict {
	v := VerdictOf(s)
	hv := htmlVerdict{Metric: v.Metric, Label: v.Label(), Definition: metricDefinition(v.Metric, s)}
	if v.Unknown != "" {
		hv.Caveats = append(hv.Caveats, fmt.Sprintf("The experiment names the key metric %q, which this report does not know; strategies are ranked by %s instead.", v.Unknown, v.Label()))
	}
	best, ok := v.Best()
	if !ok {
		hv.None = true
		return hv
	}
	worst, _ := v.Worst()
	hv.Best, hv.BestValue = best.Strategy, v.Format(best.Value)
	hv.Worst, hv.WorstValue = worst.Strategy, v.Format(worst.Value)
	hv.Single, hv.Tied = len(v.Ranking) == 1, v.Tied()
	hv.Margin = v.Margin()
	for i, r := range v.Ranking {
		hr := htmlRank{Place: i + 1, Strategy: r.Strategy, Value: v.Format(r.Value)}
		if worst.Value > 0 {
			hr.BarPct = math.Round(1000*r.Value/worst.Value) / 10
		}
		switch {
		case hv.Single || hv.Tied:
		case i == 0:
			hr.Class = "best"
		case i == len(v.Ranking)-1:
			hr.Class = "worst"
		}
		if r.Partial {
			hr.Flags = append(hr.Flags, "partial")
		}
		if r.Behind {
			hr.Flags = append(hr.Flags, "generator behind")
		}
		hv.Ranking = append(hv.Ranking, hr)
		if i == 0 || i == len(v.Ranking)-1 {
			if r.Partial {
				hv.Caveats = append(hv.Caveats, r.Strategy+" was interrupted: its numbers cover only part of the attack.")
			}
			if r.Behind {
				hv.Caveats = append(hv.Caveats, r.Strategy+"'s load generator fell behind: its numbers describe a lighter load than the target.")
			}
		}
	}
	if n := len(s.Strategies) - len(v.Ranking); n > 0 {
		hv.Caveats = append(hv.Caveats, fmt.Sprintf("%d strategies without requests or without a value are not ranked.", n))
	}
	return hv
}

// metricDefinition says what a key metric measures, in a sentence.
func metricDefinition(name string, s *Summary) string {
	slow := "slower than the slow threshold"
	if s.SlowThresholdMs > 0 {
		slow = "slower than " + fmtNum(s.SlowThresholdMs) + " ms"
	}
	switch name {
	case "bad_ratio":
		return "The share of requests that failed or were " + slow + ", computed as error % + slow % − timeout % " +
			"(a timeout is both an error and slow; a slow failure that did not time out is counted twice, so this is an upper bound). Lower is better."
	case "error_ratio":
		return "The share of requests without a 2xx response (error statuses, timeouts, resets, refused connections). Lower is better."
	case "slow_ratio":
		return "The share of requests " + slow + ", timeouts included. Lower is better."
	case "timeout_ratio":
		return "The share of requests that hit the client timeout. Lower is better."
	case "faulty_share":
		return "The share of requests sent to the faulty instances. Lower is better."
	case "p99_ms":
		return "The latency 99% of requests stayed within, failed ones included. Lower is better."
	case "p999_ms":
		return "The latency 99.9% of requests stayed within, failed ones included. Lower is better."
	}
	return ""
}

// warnings lists what weakens the measurement: the run's notes, then a
// line for each strategy that was interrupted or whose generator fell
// behind, unless a note already names it.
func warnings(s *Summary) []string {
	out := slices.Clone(s.Notes)
	named := func(name string) bool {
		return slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, name) })
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if named(st.Name) {
			continue
		}
		if st.Partial {
			out = append(out, st.Name+": interrupted; its numbers cover only part of the attack.")
		}
		if st.GeneratorBehind {
			out = append(out, fmt.Sprintf("%s: the generator fell behind (achieved %s of %s req/s; send lag p99 %s ms); its numbers describe a lighter load.",
				st.Name, fmtNum(st.AchievedRate), fmtNum(s.TargetRate), fmtMs(st.SendLagMs.P99)))
		}
	}
	return out
}

func newHTMLExpectations(s *Summary) *htmlExpectations {
	if len(s.Expectations) == 0 {
		return nil
	}
	e := &htmlExpectations{}
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
		row := htmlExpectation{Strategy: r.Strategy, Check: r.Metric + " " + r.Op + " " + fmtWant(r.Metric, r.Want), Got: fmtGot(r.Metric, r.Got)}
		switch {
		case r.Missing:
			e.Missing++
			row.Status, row.Class, row.Got = "missing", "missing", "not measured"
		case r.Passed:
			e.Passed++
			row.Status, row.Class = "passed", "passed"
		default:
			e.Failed++
			row.Status, row.Class = "FAILED", "failed"
		}
		e.Rows = append(e.Rows, row)
	}
	return e
}

func isRatioMetric(name string) bool {
	return strings.HasSuffix(name, "_ratio") || strings.HasSuffix(name, "_share")
}

// fmtWant writes an expectation's bound as the file gives it, with the
// percentage for ratios.
func fmtWant(metric string, v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if isRatioMetric(metric) {
		s += " (" + fmtPct(v) + "%)"
	}
	return s
}

func fmtGot(metric string, v float64) string {
	switch {
	case isRatioMetric(metric):
		return strconv.FormatFloat(v, 'g', 4, 64) + " (" + fmtPct(v) + "%)"
	case strings.HasSuffix(metric, "_ms"):
		return fmtMs(v) + " ms"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// keyColumn is the comparison column that shows a key metric, or -1 when
// the table has none and one is added.
var keyColumn = map[string]int{"faulty_share": 1, "p99_ms": 3, "slow_ratio": 4, "error_ratio": 5, "timeout_ratio": 6}

// comparisonTable has the columns of report.md's comparison, plus the key
// metric first when report.md has no column for it; the key metric's best
// and worst cells are marked.
func comparisonTable(s *Summary) ([]htmlColumn, [][]htmlCell) {
	slow := "slow %"
	if s.SlowThresholdMs > 0 {
		slow = "slow % (> " + fmtNum(s.SlowThresholdMs) + " ms)"
	}
	cols := []htmlColumn{
		{Head: "strategy"}, {Head: "faulty share %", Num: true}, {Head: "p50 ms", Num: true}, {Head: "p99 ms", Num: true},
		{Head: slow, Num: true}, {Head: "error %", Num: true}, {Head: "timeout %", Num: true}, {Head: "ejections", Num: true},
		{Head: "requests", Num: true}, {Head: "achieved rate req/s", Num: true},
	}
	v := VerdictOf(s)
	key, extra := keyColumn[v.Metric], false
	if _, ok := keyColumn[v.Metric]; !ok {
		extra = true
		head := map[string]string{"bad_ratio": "bad %", "p999_ms": "p99.9 ms", "max_avg_load": "max/avg load",
			"max_jump_rps": "max 1 s jump req/s", "share_stddev": "share std dev %", "error_tail_s": "errors past fault s"}[v.Metric]
		cols = slices.Insert(cols, 1, htmlColumn{Head: head, Num: true})
		key = 1
	}
	cols[key].Key = true
	cols[key].Title = "key metric: " + v.Label()

	best, worst := math.NaN(), math.NaN()
	if b, ok := v.Best(); ok && !v.Tied() {
		w, _ := v.Worst()
		best, worst = b.Value, w.Value
	}
	var rows [][]htmlCell
	for i := range s.Strategies {
		st := &s.Strategies[i]
		name := htmlCell{Text: st.Name, Class: "name"}
		if st.Partial {
			name.Badge = "partial"
		}
		faulty := "-"
		if len(s.FaultyInstances) > 0 {
			faulty = fmtPct(st.FaultyShare)
		}
		rate := htmlCell{Text: fmtNum(st.AchievedRate), Class: "num"}
		if st.GeneratorBehind {
			rate.Badge, rate.Class = "generator behind", "num warn"
		}
		num := func(t string) htmlCell { return htmlCell{Text: t, Class: "num"} }
		row := []htmlCell{name, num(faulty), num(fmtMs(st.LatencyMs.P50)), num(fmtMs(st.LatencyMs.P99)),
			num(fmtPct(st.SlowRatio)), num(fmtPct(st.ErrorRatio)), num(fmtPct(st.TimeoutRatio)),
			num(strconv.Itoa(st.Ejections)), num(strconv.FormatInt(st.Requests, 10)), rate}
		val, _ := MetricValue(st, v.Metric)
		if extra {
			text := v.Format(val)
			for _, unit := range []string{"%", " ms", " ×", " req/s", " s"} {
				text = strings.TrimSuffix(text, unit)
			}
			row = slices.Insert(row, 1, num(text))
		}
		row[key].Class += " key"
		if st.Requests > 0 {
			switch val {
			case best:
				row[key].Class += " best"
			case worst:
				row[key].Class += " worst"
			}
		}
		rows = append(rows, row)
	}
	return cols, rows
}

func howToRead(s *Summary) []string {
	n := instanceCount(s)
	fair := "1/N"
	if n > 0 {
		fair = fmt.Sprintf("1/%d = %s%%", n, fmtPct(1/float64(n)))
	}
	return []string{
		"Every latency counts every request, failed ones included; a timeout counts as its timeout. " +
			"p50 is the typical request and hides a tail: compare p99 and the slow share before calling a strategy good. " +
			"A fast failure lowers latency, so read the error ratio beside it.",
		"Under an even split each instance gets " + fair + " of the requests; " +
			"a faulty share well above that means the strategy favours the faulty instance, well below means it avoids it.",
		"A strategy marked “generator behind” was offered less load than the target, so its numbers describe a lighter load.",
	}
}

func newHTMLStrategy(s *Summary, st *Strategy, anchor string) htmlStrategy {
	hs := htmlStrategy{Anchor: anchor, Name: st.Name}
	if st.Partial {
		hs.Flags = append(hs.Flags, "partial")
	}
	if st.GeneratorBehind {
		hs.Flags = append(hs.Flags, "generator behind")
	}
	hs.Summary = fmt.Sprintf("error %s%%, p99 %s ms, %d requests", fmtPct(st.ErrorRatio), fmtMs(st.LatencyMs.P99), st.Requests)
	if key := VerdictOf(s); key.Metric != "error_ratio" && key.Metric != "p99_ms" {
		v, _ := MetricValue(st, key.Metric)
		hs.Summary = fmt.Sprintf("%s %s, %s", key.Metric, key.Format(v), hs.Summary)
	}
	hs.Facts = append(hs.Facts, fmt.Sprintf("%d requests in %s s (%s req/s)", st.Requests, fmtNum(st.ElapsedS), fmtNum(st.AchievedRate)))
	if st.GeneratorBehind {
		hs.Facts = append(hs.Facts, fmt.Sprintf("generator behind: send lag p50 %s ms, p99 %s ms, max %s ms",
			fmtMs(st.SendLagMs.P50), fmtMs(st.SendLagMs.P99), fmtMs(st.SendLagMs.Max)))
	}
	hs.Facts = append(hs.Facts, fmt.Sprintf("latency ms: mean %s, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s",
		fmtMs(st.LatencyMs.Mean), fmtMs(st.LatencyMs.P50), fmtMs(st.LatencyMs.P90),
		fmtMs(st.LatencyMs.P99), fmtMs(st.LatencyMs.P999), fmtMs(st.LatencyMs.Max)))
	hs.Facts = append(hs.Facts, fmt.Sprintf("success %s%%, errors %s%%, timeouts %s%%, slow %s%%",
		fmtSuccess(st.SuccessRatio), fmtPct(st.ErrorRatio), fmtPct(st.TimeoutRatio), fmtPct(st.SlowRatio)))
	if st.Unattributed > 0 {
		hs.Facts = append(hs.Facts, fmt.Sprintf("%d requests never reached an instance", st.Unattributed))
	}
	if len(st.Events) > 0 {
		ej, re := eventCounts(st.Events)
		hs.Facts = append(hs.Facts, fmt.Sprintf("%d ejection and %d re-admission events", ej, re))
	}
	faulty := faultySet(s, st)
	for _, in := range st.Instances {
		hs.Instances = append(hs.Instances, htmlInstance{
			ID: in.ID, Swatch: template.CSS("background:" + cssColor(instanceColor(in.ID))),
			Faulty: faulty[in.ID], Requests: in.Requests, Share: fmtPct(in.Share),
			Errors: in.Errors, ErrorPct: fmtPct(in.ErrorRatio), Timeouts: in.Timeouts, Slow: in.Slow,
			P50: fmtMs(in.LatencyMs.P50), P99: fmtMs(in.LatencyMs.P99), Max: fmtMs(in.LatencyMs.Max),
		})
	}
	return hs
}

func cssColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// settings returns the run's settings and its environment as rows.
func settings(s *Summary) (set, env []kv) {
	add := func(rows *[]kv, k, v string) {
		if v != "" {
			*rows = append(*rows, kv{k, v})
		}
	}
	if n := instanceCount(s); n > 0 {
		add(&set, "instances", strconv.Itoa(n))
	}
	add(&set, "workers per instance", fmtWorkers(s.Workers))
	add(&set, "service time", s.Service)
	add(&set, "arrivals", s.Arrival)
	add(&set, "target rate", fmtNum(s.TargetRate)+" req/s")
	add(&set, "duration per strategy", fmtNum(s.DurationS)+" s")
	if s.TimeoutMs > 0 {
		add(&set, "request timeout", fmtNum(s.TimeoutMs)+" ms")
	}
	add(&set, "slow threshold", fmtNum(s.SlowThresholdMs)+" ms")
	if len(s.Faults) == 0 {
		add(&set, "faults", "none")
	}
	for i, f := range s.Faults {
		k := ""
		if i == 0 {
			k = "faults"
		}
		set = append(set, kv{k, fmtFault(f)})
	}
	if len(s.FaultyInstances) > 0 {
		add(&set, "faulty instances", fmtIDs(s.FaultyInstances))
	}
	key := s.KeyMetric
	if key == "" {
		key = DefaultKeyMetric + " (default)"
	}
	add(&set, "key metric", key)

	add(&env, "engine", s.Engine)
	add(&env, "backends", s.Backends)
	add(&env, "seed", strconv.FormatUint(s.Seed, 10))
	if !s.Started.IsZero() {
		add(&env, "started", s.Started.UTC().Format(time.RFC3339))
	}
	add(&env, "Go version", s.GoVersion)
	if s.CPUs > 0 {
		add(&env, "CPUs", strconv.Itoa(s.CPUs))
	}
	add(&env, "lbchaos version", s.Version)
	return set, env
}

// embedPlot reads a plot's SVG (or, without one, its PNG) from fsys.
func embedPlot(fsys fs.FS, p Plot) (htmlPlot, error) {
	hp := htmlPlot{Title: p.Title}
	if p.SVG != "" {
		b, err := fs.ReadFile(fsys, p.SVG)
		if err != nil {
			return hp, fmt.Errorf("reports: embedding plot: %w", err)
		}
		svg, err := inlineSVG(b)
		if err != nil {
			return hp, fmt.Errorf("reports: embedding plot %s: %w", p.SVG, err)
		}
		hp.SVG = svg
		return hp, nil
	}
	if p.PNG != "" {
		b, err := fs.ReadFile(fsys, p.PNG)
		if err != nil {
			return hp, fmt.Errorf("reports: embedding plot: %w", err)
		}
		hp.PNG = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	}
	return hp, nil
}

// inlineSVG returns an SVG document written by RenderPlots as an element
// to place in HTML: the XML declaration and comments before the <svg>
// element are dropped. It rejects documents with scripts, event handlers
// or references to external resources, which the plots never contain.
func inlineSVG(b []byte) (template.HTML, error) {
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("no <svg> element")
	}
	b = bytes.TrimSpace(b[i:])
	low := bytes.ToLower(b)
	for _, bad := range []string{"<script", "<foreignobject", "href=\"http", "href='http"} {
		if bytes.Contains(low, []byte(bad)) {
			return "", fmt.Errorf("SVG contains %q", bad)
		}
	}
	if hasEventAttr(low) {
		return "", fmt.Errorf("event handler attribute in SVG")
	}
	return template.HTML(b), nil
}

// hasEventAttr reports whether an SVG's markup (lower-cased) has an
// attribute named on...=, outside text content.
func hasEventAttr(low []byte) bool {
	inTag := false
	for i := 0; i < len(low); i++ {
		switch c := low[i]; {
		case c == '<':
			inTag = true
		case c == '>':
			inTag = false
		case inTag && (c == ' ' || c == '\t' || c == '\n') && bytes.HasPrefix(low[i+1:], []byte("on")):
			j := i + 3
			for j < len(low) && low[j] >= 'a' && low[j] <= 'z' {
				j++
			}
			if j < len(low) && low[j] == '=' {
				return true
			}
		}
	}
	return false
}

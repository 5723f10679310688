package reports

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// proxySample is a real run of three proxies under test in front of four
// instances, one of them failing fast: proxy names carry ":" and "|", the
// harness notes each proxy, and requests the client gave up on were never
// attributed to an instance.
func proxySample() *Summary {
	s := &Summary{
		Schema: Schema, Experiment: "fast-fail", Engine: "real", Backends: "process", Seed: 7,
		DurationS: 10, TargetRate: 1000, SlowThresholdMs: 500, FaultyInstances: []int{0}, Instances: 4,
		Faults:    []FaultWindow{{Instance: 0, Mode: "fail", Detail: "status=503 delay=1ms", EndS: 10}},
		KeyMetric: "error_ratio", Version: "v0.3.0",
	}
	for i, p := range []struct {
		name         string
		errs, faulty float64
		unattributed int64
	}{
		{"nginx:round_robin", 0.25, 0.25, 0},
		{"nginx:least_conn(next_upstream=error|timeout|http_503)", 0.001, 0, 3},
		{"haproxy:random(2)+observe(error_limit=10,on_error=mark-down)", 0.02, 0.04, 0},
	} {
		s.Notes = append(s.Notes, p.name+": a real proxy between the load generator and the backends; its own ejections and health checks are not observed, and its latency includes the extra hop.")
		st := Strategy{Name: p.name, Requests: 10000, AchievedRate: 1000, ElapsedS: 10, ErrorRatio: p.errs, SuccessRatio: 1 - p.errs,
			FaultyShare: p.faulty, Unattributed: p.unattributed, EjectionsObserved: new(false),
			LatencyMs: Latency{Mean: 10.5 + float64(i), P50: 10.2, P90: 10.9, P99: 12 + float64(i), P999: 14, Max: 30}}
		for id := range 4 {
			share := (1 - p.faulty) / 3
			if id == 0 {
				share = p.faulty
			}
			in := Instance{ID: id, Faulty: id == 0, Share: share, Requests: int64(share * 10000), LatencyMs: Latency{P50: 10.1, P99: 11, Max: 20}}
			if id == 0 && in.Requests > 0 {
				in.Errors, in.ErrorRatio = in.Requests, 1
			}
			if strings.HasPrefix(p.name, "nginx:") {
				// nginx logs every upstream tried: with http_503 in
				// next_upstream each request that met the faulty
				// instance was retried on another.
				attempts := in.Requests
				if p.faulty == 0 && id == 0 {
					attempts = 2500
				}
				in.Attempts = &attempts
			}
			st.Instances = append(st.Instances, in)
		}
		s.Strategies = append(s.Strategies, st)
	}
	s.Glossary = []Term{
		{Name: "nginx", Text: "a real nginx in front of the instances"},
		{Name: "haproxy", Text: "a real HAProxy in front of the instances"},
	}
	return s
}

// viewPlots are plot files for the sample runs: one across strategies, one
// of a sample strategy, and one of a strategy no run has.
var viewPlots = []Plot{
	{Title: "Request share per instance, by strategy", PNG: "share.png", SVG: "share.svg"},
	{Title: "round-robin: latency per instance over time", PNG: "latency-round-robin.png", SVG: "latency-round-robin.svg", Strategy: "round-robin"},
	{Title: "gone: latency", PNG: "latency-gone.png", Strategy: "gone"},
}

// viewCases are the named sample runs the view and both renderers are
// tested on.
var viewCases = []struct {
	name    string
	summary func() *Summary
}{
	{"without expectations", sampleSummary},
	{"with expectations", richSample},
	{"partial run", partialSample},
	{"proxies", proxySample},
}

// goldenName is a file name for a case: "partial run" → "partial_run".
func goldenName(prefix, name, ext string) string {
	return prefix + "_" + strings.ReplaceAll(name, " ", "_") + ext
}

// scalarList matches an indented JSON list of strings, which the view
// goldens keep on one line; newline matches the layout inside it.
var (
	scalarList = regexp.MustCompile(`\[\s*"(?:[^"\\]|\\.)*"(?:,\s*"(?:[^"\\]|\\.)*")*\s*\]`)
	newline    = regexp.MustCompile(`\s*\n\s*`)
)

func TestViewGolden(t *testing.T) {
	for _, tc := range viewCases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.MarshalIndent(newView(tc.summary(), viewPlots), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = scalarList.ReplaceAllFunc(b, func(m []byte) []byte { return newline.ReplaceAll(m, nil) })
			checkGolden(t, goldenName("view", tc.name, ".json"), append(b, '\n'))
		})
	}
}

func TestView(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     *Summary
		check func(t *testing.T, v *view)
	}{
		{"without expectations", sampleSummary(), func(t *testing.T, v *view) {
			if v.Expectations != nil {
				t.Errorf("expectations %+v, want none", v.Expectations)
			}
			if c := v.Comparison.Columns[1]; c.Head != "bad %" || !c.Key {
				t.Errorf("column 1 is %+v, want the default key metric bad %% added first", c)
			}
			if v.Partial != "" || strings.Contains(v.Title, "PARTIAL") {
				t.Errorf("a complete run is marked partial: %q, %q", v.Title, v.Partial)
			}
		}},
		{"with expectations", richSample(), func(t *testing.T, v *view) {
			e := v.Expectations
			if e == nil || e.Passed != 2 || e.Failed != 1 || e.Missing != 1 {
				t.Fatalf("expectations %+v, want 2 passed, 1 failed, 1 missing", e)
			}
			var states []string
			for _, r := range e.Rows {
				states = append(states, r.State)
			}
			if d := cmp.Diff([]string{"failed", "missing", "passed", "passed"}, states); d != "" {
				t.Errorf("expectation order (-want +got):\n%s", d)
			}
			keys := slices.IndexFunc(v.Comparison.Columns, func(c column) bool { return c.Key })
			if c := v.Comparison.Columns[keys]; c.Head != "error %" {
				t.Errorf("key column %+v, want error %% in its usual place", c)
			}
			if len(v.Comparison.Columns) != 1+len(comparisonColumns) {
				t.Errorf("%d columns, want no added key column", len(v.Comparison.Columns))
			}
			if got := v.Comparison.Rows[1][keys].Mark; got != "worst" {
				t.Errorf("least-inflight's key cell marked %q, want worst", got)
			}
		}},
		{"partial run", partialSample(), func(t *testing.T, v *view) {
			if v.Partial != partialBanner || !strings.HasSuffix(v.Title, "(PARTIAL)") {
				t.Errorf("title %q, banner %q", v.Title, v.Partial)
			}
			if d := cmp.Diff([]string{"partial"}, v.Strategies[2].Flags); d != "" {
				t.Errorf("interrupted strategy's flags (-want +got):\n%s", d)
			}
			// A note names the interrupted strategy: no second line on it.
			if n := len(v.Notes); n != 2 {
				t.Errorf("%d notes, want the run's 2:\n%s", n, strings.Join(v.Notes, "\n"))
			}
		}},
		{"proxies", proxySample(), func(t *testing.T, v *view) {
			var anchors []string
			for _, sv := range v.Strategies {
				anchors = append(anchors, sv.Anchor)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(anchors)))) != len(anchors) {
				t.Errorf("anchors not unique: %v", anchors)
			}
			if !slices.Contains(v.Strategies[1].Facts, "3 requests never reached an instance") {
				t.Errorf("unattributed requests missing from facts: %v", v.Strategies[1].Facts)
			}
			if len(v.Notes) != 1 || !strings.HasPrefix(v.Notes[0], "nginx:round_robin, nginx:least_conn(next_upstream=error|timeout|http_503), haproxy:random(2)+observe(error_limit=10,on_error=mark-down): a real proxy") {
				t.Errorf("notes %q, want the three proxies' identical notes merged into one", v.Notes)
			}
			ej := slices.IndexFunc(v.Comparison.Columns, func(c column) bool { return c.Head == "ejections" })
			for _, r := range v.Comparison.Rows {
				if got := r[ej].Text; got != "n/a" {
					t.Errorf("%s: ejections %q, want n/a (not observed)", r[0].Text, got)
				}
			}
			at := slices.IndexFunc(v.InstanceColumns, func(c column) bool { return c.Head == "attempts" })
			if at < 0 {
				t.Fatalf("no attempts column in %+v though nginx retried", v.InstanceColumns)
			}
			// Cells follow the id and status columns.
			if got := v.Strategies[1].Instances[0].Cells[at-2]; got != "2500" {
				t.Errorf("retrying nginx's faulty instance: attempts %q, want 2500", got)
			}
			if got := v.Strategies[2].Instances[0].Cells[at-2]; got != "—" {
				t.Errorf("haproxy (attempts not logged): attempts %q, want —", got)
			}
			if !slices.ContainsFunc(v.Strategies[1].Facts, func(f string) bool { return strings.HasPrefix(f, "12499 attempts on the instances for 9999 requests") }) {
				t.Errorf("no fact on the retries: %q", v.Strategies[1].Facts)
			}
			if len(v.Terms) != 2 || v.Terms[0].Key != "nginx" {
				t.Errorf("terms %+v, want the summary's glossary", v.Terms)
			}
			if v.Scenario != nil {
				t.Errorf("scenario table %+v for a run that measured none", v.Scenario)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, newView(tc.s, viewPlots))
		})
	}
}

func TestViewPlots(t *testing.T) {
	v := newView(sampleSummary(), viewPlots)
	if len(v.Plots) != 1 || v.Plots[0].SVG != "share.svg" {
		t.Errorf("plots across strategies: %+v", v.Plots)
	}
	if len(v.Strategies[0].Plots) != 1 || len(v.Strategies[1].Plots) != 0 {
		t.Errorf("round-robin has %d plots, least-inflight %d; want 1 and 0", len(v.Strategies[0].Plots), len(v.Strategies[1].Plots))
	}
}

// TestRenderersShowTheView checks that report.md and report.html both carry
// every section of the view: the verdict, each note, each expectation, each
// comparison row, and the same settings and environment rows.
func TestRenderersShowTheView(t *testing.T) {
	for _, tc := range viewCases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.summary()
			v := newView(s, nil)
			var md bytes.Buffer
			if err := WriteMarkdown(&md, s, nil); err != nil {
				t.Fatal(err)
			}
			page := writeHTML(t, s, nil, nil)
			html := htmlUnescape(page)
			var want []string
			if !v.Verdict.None {
				want = append(want, v.Verdict.Best.Strategy, v.Verdict.Best.Value, v.Verdict.Definition)
			}
			want = append(want, v.Verdict.Caveats...)
			want = append(want, v.Notes...)
			if e := v.Expectations; e != nil {
				for _, r := range e.Rows {
					want = append(want, r.Check, r.Got)
				}
			}
			for _, r := range append(slices.Clone(v.Settings), v.Environment...) {
				want = append(want, r.Key, r.Value)
			}
			for _, w := range want {
				if !strings.Contains(md.String(), mdText(w)) {
					t.Errorf("report.md lacks %q", w)
				}
				if !strings.Contains(html, w) {
					t.Errorf("report.html lacks %q", w)
				}
			}
			// Settings rows in the same order in both.
			mdRows := sectionRows(t, md.String(), "## Settings\n")
			var viewRows []string
			for _, r := range v.Settings {
				viewRows = append(viewRows, "| "+r.Key+" | "+r.Value+" |")
			}
			if d := cmp.Diff(viewRows, mdRows); d != "" {
				t.Errorf("report.md settings (-view +md):\n%s", d)
			}
		})
	}
}

// sectionRows returns the table rows after the header rule of the section
// that starts with heading.
func sectionRows(t *testing.T, md, heading string) []string {
	t.Helper()
	i := strings.Index(md, heading)
	if i < 0 {
		t.Fatalf("no %q section", heading)
	}
	var rows []string
	lines := strings.Split(md[i:], "\n")
	for _, l := range lines[4:] { // heading, blank, header, rule
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, strings.ReplaceAll(l, `\|`, "|"))
	}
	return rows
}

// htmlUnescape reads back what html/template escapes in text.
func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

func TestRenderGolden(t *testing.T) {
	fsys := fstest.MapFS{
		"share.svg":               {Data: []byte(tinySVG)},
		"latency-round-robin.svg": {Data: []byte(tinySVG)},
		"latency-gone.png":        {Data: []byte("\x89PNG fake")},
	}
	for _, tc := range viewCases {
		t.Run(tc.name, func(t *testing.T) {
			var md bytes.Buffer
			if err := WriteMarkdown(&md, tc.summary(), viewPlots); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, goldenName("report", tc.name, ".md"), md.Bytes())
			var html bytes.Buffer
			if err := WriteHTML(&html, tc.summary(), viewPlots, fsys); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, goldenName("report", tc.name, ".html"), html.Bytes())
		})
	}
}

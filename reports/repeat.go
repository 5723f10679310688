package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// RepeatsSchema identifies the format of RepeatsFile.
const RepeatsSchema = "lbchaos/repeats/v1"

// RepeatsFile is the aggregate `lbchaos run --repeat N` writes beside the
// repetitions' own directories (rep-1/, rep-2/, ...). It holds no
// single-run summary: each repetition's summary.json is in its directory.
const RepeatsFile = "repeats.json"

// RepeatsMarkdownFile is the aggregate rendered as a Markdown table.
const RepeatsMarkdownFile = "repeats.md"

// Repeated is a run repeated with seeds Seeds[0], Seeds[0]+1, ...: per
// strategy and metric, the value of every repetition, with its median and
// range.
type Repeated struct {
	Schema     string   `json:"schema"`
	Experiment string   `json:"experiment"`
	Engine     string   `json:"engine"`
	Backends   string   `json:"backends"`
	DurationS  float64  `json:"duration_s"`
	TargetRate float64  `json:"target_rate"`
	Seeds      []uint64 `json:"seeds"`
	// Runs are the repetitions' directories, relative to the aggregate's,
	// in seed order.
	Runs []string `json:"runs"`
	// Partial is true when any repetition was partial.
	Partial bool `json:"partial,omitempty"`
	// Advisory is true when the runs overrode the experiment file's load
	// (duration or rate), so that its expectations do not fail the run.
	Advisory   bool               `json:"advisory,omitempty"`
	Strategies []RepeatedStrategy `json:"strategies"`
	// Expectations are the experiment's expectations checked against the
	// median over the repetitions of each one's value (Got).
	Expectations []ExpectationResult `json:"expectations,omitempty"`
}

// RepeatedStrategy is one strategy's metrics over the repetitions. A
// metric is listed when every repetition that ran the strategy measured it.
type RepeatedStrategy struct {
	Name    string            `json:"name"`
	Metrics map[string]Spread `json:"metrics"`
}

// Spread is one metric over the repetitions: each repetition's value in
// seed order, their median, minimum and maximum.
type Spread struct {
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

// repeatedMetrics are the metrics a Repeated keeps: those compare lists
// and the default key metric.
var repeatedMetrics = append([]string{DefaultKeyMetric}, compared...)

// NewSpread is the spread of values, kept in their order.
func NewSpread(values []float64) Spread {
	s := Spread{Values: slices.Clone(values)}
	if len(values) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(values))
	n := len(sorted)
	s.Min, s.Max = sorted[0], sorted[n-1]
	if n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return s
}

// Aggregate builds the aggregate of runs, the repetitions in seed order;
// dirs are their directories relative to the aggregate's. The runs must be
// of one experiment, engine and backends.
func Aggregate(runs []*Summary, dirs []string) (*Repeated, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("aggregate: no runs")
	}
	if len(dirs) != len(runs) {
		return nil, fmt.Errorf("aggregate: %d runs but %d directories", len(runs), len(dirs))
	}
	first := runs[0]
	r := &Repeated{
		Schema: RepeatsSchema, Experiment: first.Experiment, Engine: first.Engine, Backends: first.Backends,
		DurationS: first.DurationS, TargetRate: first.TargetRate, Runs: slices.Clone(dirs),
	}
	var names []string
	for i, s := range runs {
		if s.Experiment != first.Experiment || s.Engine != first.Engine || s.Backends != first.Backends {
			return nil, fmt.Errorf("aggregate: %s is a run of %s (%s engine, %s backends), not of %s (%s, %s)",
				dirs[i], s.Experiment, s.Engine, s.Backends, first.Experiment, first.Engine, first.Backends)
		}
		r.Seeds = append(r.Seeds, s.Seed)
		// A repetition its abort condition stopped is as incomplete as an
		// interrupted one.
		r.Partial = r.Partial || s.Partial || s.Abort != nil
		for _, st := range s.Strategies {
			if !slices.Contains(names, st.Name) {
				names = append(names, st.Name)
			}
		}
	}
	for _, name := range names {
		rs := RepeatedStrategy{Name: name, Metrics: map[string]Spread{}}
		for _, m := range mustMetrics(repeatedMetrics) {
			var values []float64
			for _, s := range runs {
				if st, ok := strategyNamed(s, name); ok {
					values = append(values, m.Value(&st))
				}
			}
			if !slices.ContainsFunc(values, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
				rs.Metrics[m.Name] = NewSpread(values)
			}
		}
		r.Strategies = append(r.Strategies, rs)
	}
	r.Expectations = medianExpectations(runs)
	return r, nil
}

// medianExpectations checks each expectation of the first run against the
// median of the values the repetitions that ran its strategy got.
func medianExpectations(runs []*Summary) []ExpectationResult {
	var out []ExpectationResult
	for i, e := range runs[0].Expectations {
		var got []float64
		for _, s := range runs {
			if i < len(s.Expectations) && !s.Expectations[i].Missing && s.Expectations[i].Strategy == e.Strategy && s.Expectations[i].Metric == e.Metric {
				got = append(got, s.Expectations[i].Got)
			}
		}
		res := ExpectationResult{Strategy: e.Strategy, Metric: e.Metric, Op: e.Op, Want: e.Want, Missing: len(got) == 0}
		if !res.Missing {
			res.Got = NewSpread(got).Median
			res.Passed = holds(res.Got, e.Op, e.Want)
		}
		out = append(out, res)
	}
	return out
}

// holds reports whether got op want, op one of <, <=, >, >=.
func holds(got float64, op string, want float64) bool {
	switch op {
	case "<":
		return got < want
	case "<=":
		return got <= want
	case ">":
		return got > want
	case ">=":
		return got >= want
	}
	return false
}

// FailedExpectations counts the expectations that failed (not missing).
func FailedExpectations(results []ExpectationResult) int {
	n := 0
	for _, r := range results {
		if !r.Missing && !r.Passed {
			n++
		}
	}
	return n
}

// WriteRepeatedJSON writes r as indented JSON.
func WriteRepeatedJSON(w io.Writer, r *Repeated) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadRepeatedJSON reads an aggregate WriteRepeatedJSON wrote.
func ReadRepeatedJSON(rd io.Reader) (*Repeated, error) {
	var r Repeated
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, err
	}
	if r.Schema != RepeatsSchema {
		return nil, fmt.Errorf("schema %q, want %q", r.Schema, RepeatsSchema)
	}
	for _, st := range r.Strategies {
		for name, sp := range st.Metrics {
			if len(sp.Values) == 0 {
				return nil, fmt.Errorf("strategies[%s].metrics.%s: no values", st.Name, name)
			}
		}
	}
	return &r, nil
}

// Single is s as a repetition of one, so that a single run and a repeated
// one compare alike.
func Single(s *Summary) *Repeated {
	r, err := Aggregate([]*Summary{s}, []string{"."})
	if err != nil {
		panic("reports: aggregate of one run: " + err.Error())
	}
	return r
}

func (r *Repeated) strategy(name string) (RepeatedStrategy, bool) {
	for _, st := range r.Strategies {
		if st.Name == name {
			return st, true
		}
	}
	return RepeatedStrategy{}, false
}

func (r *Repeated) describe() string {
	seeds := "seed " + strconv.FormatUint(r.Seeds[0], 10)
	if n := len(r.Seeds); n > 1 {
		seeds = fmt.Sprintf("%d repetitions, seeds %d..%d", n, r.Seeds[0], r.Seeds[n-1])
	}
	return fmt.Sprintf("%s, %s engine, %s backends, %s", r.Experiment, r.Engine, r.Backends, seeds)
}

// spreadCell is "median (min–max)", with the unit once when withUnit, or
// the median alone when the range is nothing at the metric's precision.
func spreadCell(m Metric, sp Spread, withUnit bool) string {
	med, lo, hi := m.Text(sp.Median), m.Text(sp.Min), m.Text(sp.Max)
	unit := ""
	if withUnit {
		med = m.Format(sp.Median)
		if u := m.Unit(); u == "%" {
			unit = u
		} else if u != "" {
			unit = " " + u
		}
	}
	if lo == hi {
		return med
	}
	return fmt.Sprintf("%s (%s–%s%s)", med, lo, hi, unit)
}

// WriteRepeatedMarkdown renders r: a table per strategy of each metric's
// median and range over the repetitions, and the expectations checked on
// the medians.
func WriteRepeatedMarkdown(w io.Writer, r *Repeated) error {
	fmt.Fprintf(w, "# %s: %d repetitions\n\n", r.Experiment, len(r.Seeds))
	fmt.Fprintf(w, "%s; %g s at %g req/s per strategy. Each cell is the median over the repetitions, with the range (min–max) when they differ. Repetitions: %s.\n\n",
		r.describe(), r.DurationS, r.TargetRate, strings.Join(r.Runs, ", "))
	if r.Partial {
		fmt.Fprintln(w, "**Partial**: a repetition was interrupted.")
		fmt.Fprintln(w)
	}
	metrics := mustMetrics(repeatedMetrics)
	fmt.Fprint(w, "| strategy |")
	for _, m := range metrics {
		fmt.Fprintf(w, " %s |", m.Head)
	}
	fmt.Fprint(w, "\n| --- |")
	for range metrics {
		fmt.Fprint(w, " --- |")
	}
	fmt.Fprintln(w)
	for _, st := range r.Strategies {
		fmt.Fprintf(w, "| %s |", st.Name)
		for _, m := range metrics {
			cell := "—"
			if sp, ok := st.Metrics[m.Name]; ok {
				cell = spreadCell(m, sp, false)
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
	if len(r.Expectations) > 0 {
		fmt.Fprintln(w, "\n## Expectations (on the medians)")
		if r.Advisory {
			fmt.Fprintln(w, "\nThe runs overrode the experiment file's duration or rate, so the expectations are advisory.")
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "```")
		if err := WriteExpectations(w, r.Expectations); err != nil {
			return err
		}
		fmt.Fprintln(w, "```")
	}
	return nil
}

package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// view is what report.md and report.html show of one Summary, section by
// section in the order both show it. Both renderers read only the view, so
// the two reports cannot drift apart; each decides only how a section
// looks. Strings are plain text: a renderer escapes them for its format.
type view struct {
	Title       string // "lbchaos report: NAME", "(PARTIAL)" appended for a partial run
	Subtitle    string // the run in one line: engine, load, instances, seed, start
	Description string
	// Partial is the banner of an interrupted run; "" for a complete one.
	Partial string
	// Abort is the banner of a run its abort condition stopped; "" for
	// one it did not.
	Abort string
	// Harness opens the report when the load generator saturated: a line
	// per strategy whose numbers describe the harness (harness.go).
	Harness []string `json:",omitempty"`

	Verdict verdictView
	// Notes are what weakens the measurement: the run's notes, then any
	// interrupted or generator-behind strategy no note names.
	Notes []string
	// Expectations is nil when the experiment stated none.
	Expectations *expectationsView

	// Comparison has one row per strategy: its name, then the metrics of
	// comparisonColumns, with the key metric's column marked (and added
	// after the name when it is not one of them).
	Comparison table
	FairShare  string // the faulty instances' share under an even split; "" without faults
	// Scenario holds the scenarioColumns the run measured; nil when none.
	Scenario *table
	// Tiers holds a tiered run's traffic per tier; nil without tiers.
	Tiers     *table
	TiersNote string
	// Zones holds a run's traffic per zone; nil without zones.
	Zones     *table
	ZonesNote string
	// Rotation holds the time out of rotation behind a Service; nil
	// without one.
	Rotation     *table
	RotationNote string
	// SimVsReal, in a calibrated simulation, sets its figures beside the
	// calibrating real run's (CalibratedFrom); nil otherwise. SimVsRealNote
	// says where they come from.
	SimVsReal     *table `json:",omitempty"`
	SimVsRealNote string `json:",omitempty"`
	// HowToRead are paragraphs on reading the numbers; Glossary says what
	// each column of Comparison and Scenario means, by heading.
	HowToRead []string
	Glossary  []row
	// Terms says what each strategy, wrapper and proxy of the run does
	// (Summary.Glossary).
	Terms []row

	Plots      []Plot // the plots across strategies
	Strategies []strategyView
	// InstanceColumns head every strategy's per-instance table.
	InstanceColumns []column

	Settings    []row // how the experiment was set up
	Environment []row // where and with what it ran
	File        string
	Version     string
}

// row is a labelled value. Key is "" for a row that continues the one
// above (a second fault).
type row struct{ Key, Value string }

// table is a comparison of strategies.
type table struct {
	Columns []column
	Rows    [][]cell
}

type column struct {
	Head  string
	Title string // what the column means; "" for the strategy column
	Num   bool
	Key   bool // the key metric's column
}

type cell struct {
	Text   string
	Badges []string // flags on the value, e.g. "partial", "generator behind"
	Name   bool     // a strategy's name
	Num    bool
	Key    bool   // in the key metric's column
	Mark   string // "best" or "worst": the key metric's extremes
}

type verdictView struct {
	Metric     string // e.g. "bad_ratio"
	Label      string // e.g. "bad requests (failed or slow)"
	Head       string // the metric's column heading
	Definition string // what the metric measures and which way is better
	None       bool   // nothing ranked
	Single     bool   // one strategy ranked
	// SomeNotRanked is set when strategies were left out of the ranking
	// for their failures (the first caveat names them).
	SomeNotRanked bool
	Tied          bool
	Best          rankView
	Worst         rankView
	Margin        string
	Ranking       []rankView
	Caveats       []string
}

type rankView struct {
	Place    int
	Strategy string
	Value    string
	BarPct   float64 // bar length, percent of the worst value
	Mark     string  // "best", "worst" (every strategy at that value), or "" (also when all tie)
	Flags    []string
}

type expectationsView struct {
	Passed, Failed, Missing int
	Rows                    []expectationRow // failed first, then missing, then passed
}

type expectationRow struct {
	State    string // "failed", "missing" or "passed"
	Status   string // State as shown: "FAILED", "missing", "passed"
	Strategy string
	Check    string // e.g. "error_ratio < 0.2 (20.00%)"
	Got      string
}

type strategyView struct {
	Name      string
	Anchor    string // an id no other section of the page has
	Flags     []string
	Summary   string // the strategy's headline numbers in a line
	Facts     []string
	Incidents []incidentView `json:",omitempty"` // crashes, panics, a proxy's exit
	Instances []instanceView
	Plots     []Plot
}

// instanceView is one row of a per-instance table: Cells follow ID and
// status, in the order of view.InstanceColumns.
type instanceView struct {
	ID     int
	Faulty bool
	Cells  []string
}

// partialBanner opens the report of an interrupted run.
const partialBanner = "PARTIAL RUN. The run was interrupted; every number below covers only what was measured before the interruption."

// newView builds the view of s with the given plots (see RenderPlots);
// a plot of a strategy s does not have is left out.
func newView(s *Summary, plots []Plot) *view {
	v := &view{
		Title:       "lbchaos report: " + s.Experiment,
		Subtitle:    heading(s),
		Description: s.Description,
		Verdict:     newVerdictView(s),
		Notes:       warnings(s),
		Harness:     harnessBanner(s),
		File:        s.ExperimentFile,
		Version:     s.Version,
	}
	if s.Partial {
		v.Title += " (PARTIAL)"
		v.Partial = partialBanner
	}
	v.Abort = abortBanner(s)
	if !virtualTime(s) && !s.Started.IsZero() { // heading says "virtual time"
		v.Subtitle += ", started " + startedText(s)
	}
	v.Expectations = newExpectationsView(s)
	v.Comparison = comparisonTable(s)
	if fair := fairFaultyShare(s); finite(fair) {
		v.FairShare = fmt.Sprintf("Fair share of the faulty instance(s) (%s): %s%% of requests.", fmtIDs(s.FaultyInstances), fmtPct(fair))
	}
	v.Scenario = scenarioTable(s)
	if v.Tiers = tiersTable(s); v.Tiers != nil {
		v.TiersNote = tiersNote
	}
	if v.Zones = zonesTable(s); v.Zones != nil {
		v.ZonesNote = zonesNote
	}
	if v.Rotation = rotationTable(s); v.Rotation != nil {
		v.RotationNote = rotationNote
	}
	v.SimVsReal, v.SimVsRealNote = simVsRealTable(s), simVsRealNote(s)
	v.HowToRead = howToRead(s)
	v.Glossary = glossary(&v.Comparison, v.Scenario)
	for _, t := range s.Glossary {
		v.Terms = append(v.Terms, row{t.Name, t.Text})
	}

	byStrategy := map[string][]Plot{}
	for _, p := range plots {
		if p.Strategy == "" {
			v.Plots = append(v.Plots, p)
		} else {
			byStrategy[p.Strategy] = append(byStrategy[p.Strategy], p)
		}
	}
	used := map[string]bool{}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		sv := newStrategyView(s, st, uniqueSlug("s-"+Slug(st.Name), used))
		sv.Plots = byStrategy[st.Name]
		delete(byStrategy, st.Name) // two strategies of one name: plots go to the first
		v.Strategies = append(v.Strategies, sv)
	}
	v.InstanceColumns = instanceColumnsOf(s)
	v.Settings, v.Environment = settings(s)
	return v
}

// warnings lists what weakens the measurement: the run's notes, then a
// line for each strategy that was interrupted or whose generator fell
// behind, unless a note already names it; notes that say the same of
// several strategies are merged into one (MergeNotes).
func warnings(s *Summary) (out []string) {
	defer func() { out = MergeNotes(out) }()
	out = slices.Clone(s.Notes)
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

func howToRead(s *Summary) []string {
	n := edgeCount(s)
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

// glossary says what each metric column of the tables means.
func glossary(tables ...*table) []row {
	var out []row
	for _, t := range tables {
		if t == nil {
			continue
		}
		for _, c := range t.Columns {
			if c.Title != "" {
				out = append(out, row{c.Head, c.Title})
			}
		}
	}
	return out
}

// settings returns the run's settings and its environment as rows.
func settings(s *Summary) (set, env []row) {
	add := func(rows *[]row, k, v string) {
		if v != "" {
			*rows = append(*rows, row{k, v})
		}
	}
	if n := instanceCount(s); n > 0 {
		add(&set, "instances", strconv.Itoa(n))
	}
	add(&set, "workers per instance", fmtWorkers(s.Workers))
	add(&set, "service time", s.Service)
	add(&set, "arrivals", s.Arrival)
	if s.RateProfile != nil {
		add(&set, "target rate", fmtNum(s.TargetRate)+" req/s on average, in stages "+s.RateProfile.String())
	} else {
		add(&set, "target rate", fmtNum(s.TargetRate)+" req/s")
	}
	add(&set, "duration per strategy", fmtNum(s.DurationS)+" s")
	if s.Generators > 1 {
		add(&set, "load generators", fmt.Sprintf("%d generators on one arrival schedule (request k to generator k mod %d), each with its own balancers: "+
			"a built-in strategy ran as %d independent client-side balancers (times its replicas), each seeing only its own share of the load; "+
			"proxy strategies are unaffected (every generator sends to the one proxy)", s.Generators, s.Generators, s.Generators))
	}
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
		set = append(set, row{k, fmtFault(f)})
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
	add(&env, "started", startedText(s))
	add(&env, "Go version", s.GoVersion)
	if s.CPUs > 0 {
		add(&env, "CPUs", strconv.Itoa(s.CPUs))
	}
	add(&env, "lbchaos version", s.Version)
	return set, env
}

package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
)

// sweepOf is a sweep over rate (and faults, when faults is set) of one
// strategy "s" with p99 p99[i] at point i (NaN-free); runs[i] is the
// point's runs (0: not run yet).
func sweepOf(rates, faults []string, p99 []float64, runs []int) *Result {
	r := &Result{Repeat: 1, KeyMetric: "p99_ms", Dims: []DimOut{{Name: "rate", Values: rates}}}
	if faults != nil {
		r.Dims = append(r.Dims, DimOut{Name: "faults", Values: faults})
	}
	i := 0
	for _, rate := range rates {
		for _, f := range append(slices.Clone(faults), "")[:max(1, len(faults))] {
			p := PointResult{ID: i + 1, Params: map[string]string{"rate": rate}, Runs: runs[i], Strategies: []Figures{}}
			if faults != nil {
				p.Params["faults"] = f
			}
			if runs[i] > 0 {
				p.Strategies = append(p.Strategies, Figures{Name: "s", Median: map[string]float64{"p99_ms": p99[i]}})
			}
			r.Points = append(r.Points, p)
			i++
		}
	}
	return r
}

func TestKneeWalk(t *testing.T) {
	b, err := ParseBound("p99_ms < 100")
	if err != nil {
		t.Fatal(err)
	}
	rate := func(k Knee) string {
		if k.Rate == nil {
			return "none"
		}
		return FormatNumber(*k.Rate)
	}
	for _, c := range []struct {
		name    string
		rates   []string
		p99     []float64
		runs    []int
		aborted int // a point whose strategy an abort stopped, from 1
		want    string
		beyond  bool
		partial bool
	}{
		{"final", []string{"100", "200", "300"}, []float64{10, 20, 500}, []int{1, 1, 1}, 0, "200", false, false},
		{"beyond", []string{"100", "200", "300"}, []float64{10, 20, 30}, []int{1, 1, 1}, 0, "300", true, false},
		// The grid's rates in order, whatever the points' order.
		{"unordered grid", []string{"300", "100", "200"}, []float64{500, 10, 20}, []int{1, 1, 1}, 0, "200", false, false},
		// A rate not run yet ends the walk: at least 100, not beyond.
		{"missing", []string{"100", "200", "300"}, []float64{10, 0, 30}, []int{1, 0, 1}, 0, "100", false, true},
		{"missing last", []string{"100", "200", "300"}, []float64{10, 20, 0}, []int{1, 1, 0}, 0, "200", false, true},
		{"missing first", []string{"100", "200"}, []float64{0, 20}, []int{0, 1}, 0, "none", false, true},
		// A failing rate before the missing one: the knee is final.
		{"fails then missing", []string{"100", "200", "300"}, []float64{10, 500, 0}, []int{1, 1, 0}, 0, "100", false, false},
		// An aborted strategy fails the bound, whatever its figures.
		{"aborted", []string{"100", "200", "300"}, []float64{10, 20, 30}, []int{1, 1, 1}, 2, "100", false, false},
	} {
		r := sweepOf(c.rates, nil, c.p99, c.runs)
		if c.aborted > 0 {
			r.Points[c.aborted-1].Strategies[0].Aborted = true
		}
		ks := kneesOf(r, b)
		if len(ks) != 1 {
			t.Errorf("%s: knees %+v", c.name, ks)
			continue
		}
		if k := ks[0]; rate(k) != c.want || k.Beyond != c.beyond || k.Partial != c.partial {
			t.Errorf("%s: knee %s, beyond %v, partial %v; want %s, %v, %v", c.name, rate(k), k.Beyond, k.Partial, c.want, c.beyond, c.partial)
		}
	}
}

// The capacity sentences read right whichever way the fault moves the
// knee, and leave out a partial knee.
func TestCapacitySentences(t *testing.T) {
	b, err := ParseBound("p99_ms < 100")
	if err != nil {
		t.Fatal(err)
	}
	rates := []string{"100", "200", "300", "400"}
	for _, c := range []struct {
		p99  []float64 // by rate, faults on then off
		runs []int
		want string
	}{
		{[]float64{10, 10, 500, 20, 500, 500, 500, 500}, []int{1, 1, 1, 1, 1, 1, 1, 1}, "`s` loses 50% of its capacity to the fault (knee 100 req/s with it, 200 without)."},
		{[]float64{10, 10, 20, 20, 30, 500, 500, 500}, []int{1, 1, 1, 1, 1, 1, 1, 1}, "`s` gains 50% of capacity with the fault (knee 300 req/s with it, 200 without)."},
		{[]float64{10, 10, 20, 20, 500, 500, 500, 500}, []int{1, 1, 1, 1, 1, 1, 1, 1}, "`s` loses no capacity to the fault (knee 200 req/s with it, 200 without)."},
		{[]float64{10, 10, 0, 20, 500, 500, 500, 500}, []int{1, 1, 0, 1, 1, 1, 1, 1}, "`s` (faults=on): knee at least 100 req/s (the next rate is not measured yet)"},
	} {
		r := sweepOf(rates, []string{"on", "off"}, c.p99, c.runs)
		r.Partial = slices.Contains(c.runs, 0)
		r.Bound = b.String()
		r.Knees = kneesOf(r, b)
		got := CapacitySentences(r)
		if !slices.Contains(got, c.want) {
			t.Errorf("sentences %q, want %q", got, c.want)
		}
		for _, s := range got {
			if strings.Contains(s, "-") || r.Partial && strings.Contains(s, "capacity") {
				t.Errorf("sentence %q", s)
			}
		}
		if md := Markdown(r); r.Partial && !strings.Contains(md, "The sweep is partial: a knee *at least* there stopped at a rate not run yet.") {
			t.Errorf("partial sweep.md:\n%s", md)
		}
	}
}

// An abort condition that trips ends the run, not the sweep: the point is
// done, marked aborted, its summary kept, and it fails the bound.
func TestSweepAbort(t *testing.T) {
	c := simConfig(t, "rate=50,100,150,250", "faults=off")
	var err error
	if c.Bound, err = ParseBound("p99_ms < 200"); err != nil {
		t.Fatal(err)
	}
	// p99 over 1 s in a 2 s window trips at 250 req/s (over the 200 req/s
	// capacity), in round-robin, the first strategy; least-inflight is
	// skipped.
	c.Exp = runtest.MustExperiment(t, "capacity", capacityExp+"abort: [{p99_ms: \"> 1000\", window: 2s}]\n")
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatalf("a sweep with an aborted run: %v", err)
	}
	last := res.Points[3]
	if res.Partial || last.Runs != 1 || last.Aborted == "" || len(last.Strategies) != 2 || !last.Strategies[0].Aborted || !last.Strategies[1].Aborted {
		t.Fatalf("partial %v, the aborted point: %+v", res.Partial, last)
	}
	if res.Points[0].Aborted != "" || res.Points[0].Strategies[0].Aborted {
		t.Errorf("point 1 aborted: %+v", res.Points[0])
	}
	for _, k := range res.Knees {
		if k.Rate == nil || *k.Rate != 150 || k.Beyond || k.Partial {
			t.Errorf("knee %+v, want 150", k)
		}
	}
	f, err := os.Open(filepath.Join(c.Dir, last.Dir, "rep-1", reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s, err := reports.ReadJSON(f); err != nil || s.Abort == nil {
		t.Errorf("the aborted run's summary: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(c.Dir, MarkdownFile))
	if err != nil || !strings.Contains(string(md), "`round-robin` (aborted)") || !strings.Contains(string(md), "- point 4: p99_ms") {
		t.Errorf("sweep.md: %v\n%s", err, md)
	}
	// Resumed, the aborted run is kept, aborted.
	c.Resume = true
	res, err = Run(context.Background(), c)
	if err != nil || res.Points[3].Aborted == "" {
		t.Errorf("resumed: %v, %+v", err, res.Points[3])
	}
}

// An interrupted sweep always has a sweep.json, even when nothing ran.
func TestSweepJSONEarly(t *testing.T) {
	c := simConfig(t, "rate=50,100")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, c)
	if !errors.Is(err, harness.ErrInterrupted) || !errors.Is(err, context.Canceled) || res == nil || !res.Partial {
		t.Fatalf("interrupted at once: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(c.Dir, JSONFile)); err != nil || !strings.Contains(string(data), `"partial": true`) {
		t.Errorf("sweep.json: %v\n%s", err, data)
	}
}

func TestCheckResume(t *testing.T) {
	c := simConfig(t, "rate=50,100")
	if _, err := Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := CheckResume(c.Dir, c); err != nil {
		t.Errorf("the same arguments: %v", err)
	}
	other := c
	other.Varies = []string{"rate=50,200"}
	other.Repeat = 2
	other.EngineName = "real"
	exp := *c.Exp
	exp.Name = "other"
	other.Exp = &exp
	err := CheckResume(c.Dir, other)
	for _, want := range []string{"--resume " + c.Dir + ": that sweep ran with experiment capacity, not other", `--vary "rate=50,100", not "rate=50,200"`, "--repeat 1, not 2", "--engine sim, not real"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckResume: %v, want %q", err, want)
		}
	}
	if err := CheckResume(t.TempDir(), c); err == nil || !strings.Contains(err.Error(), "not a sweep's folder") {
		t.Errorf("an empty folder: %v", err)
	}
}

func TestPlotAxis(t *testing.T) {
	r := &Result{Dims: []DimOut{{Name: "faults", Values: []string{"on", "off"}}, {Name: "timeout", Values: []string{"1s", "2s"}}, {Name: "rate", Values: []string{"300", "100", "200"}}}}
	if x := r.xDim(); x != 2 {
		t.Errorf("x dimension %d, want rate's (2)", x)
	}
	r.Dims = r.Dims[:2]
	if x := r.xDim(); x != 1 {
		t.Errorf("x dimension %d, want timeout's (1)", x)
	}
	r.Dims = r.Dims[:1]
	if x := r.xDim(); x != -1 {
		t.Errorf("x dimension %d, want none: on/off is no axis", x)
	}
	// A curve's points in the order of x, whatever the grid's.
	r = sweepOf([]string{"300", "100", "200"}, nil, []float64{30, 10, 20}, []int{1, 1, 1})
	cs := r.curves(0, "p99_ms")
	if len(cs) != 1 || !slices.Equal(cs[0].xs, []float64{100, 200, 300}) || !slices.Equal(cs[0].ys, []float64{10, 20, 30}) {
		t.Errorf("curve %+v", cs[0])
	}
}

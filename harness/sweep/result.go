package sweep

import (
	"math"
	"slices"
	"strconv"

	"github.com/lbchaos/lbchaos/reports"
)

// Schema names sweep.json's format.
const Schema = "lbchaos-sweep/v1"

// Result is sweep.json: every point's parameters and each strategy's
// figures there, and the knees of a sweep over the rate.
type Result struct {
	Schema     string   `json:"schema"`     // "lbchaos-sweep/v1"
	Experiment string   `json:"experiment"` // the experiment varied
	Engine     string   `json:"engine"`     // "sim" or "real"
	Vary       []string `json:"vary"`       // the --vary arguments, as given
	Dims       []DimOut `json:"dims"`       // the varied parameters, in order; the first varies slowest
	Repeat     int      `json:"repeat"`     // runs per point
	KeyMetric  string   `json:"key_metric"` // the experiment's key metric
	// Bound is the --slo the knees keep, e.g. "p99_ms < 100"; absent
	// without one.
	Bound string `json:"bound,omitempty"`
	// Partial is true when the sweep was interrupted: points without
	// runs have no strategies; --resume runs them.
	Partial bool          `json:"partial,omitempty"`
	Points  []PointResult `json:"points"`
	// Knees, for a sweep over the rate with a bound, give each strategy's
	// highest rate within the bound, per combination of the other
	// parameters.
	Knees []Knee `json:"knees,omitempty"`
}

// DimOut is a varied parameter and its values.
type DimOut struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
	// Strategy is true for a strategy parameter (a template's slot).
	Strategy bool `json:"strategy,omitempty"`
}

// PointResult is one point of the grid.
type PointResult struct {
	ID     int               `json:"id"`     // from 1
	Dir    string            `json:"dir"`    // its folder, with rep-K/summary.json per run
	Params map[string]string `json:"params"` // each varied parameter's value
	Runs   int               `json:"runs"`   // runs done (Repeat unless interrupted)
	// Aborted, when an abort condition of the experiment tripped in a run
	// of the point, says what tripped (the first such run's): the run
	// counts as done, its strategies the abort stopped or skipped fail the
	// bound there.
	Aborted string `json:"aborted,omitempty"`
	// Strategies are each strategy's figures at the point, in run order.
	Strategies []Figures `json:"strategies"`
}

// Figures are one strategy's metrics at a point: the median over the
// point's runs, and their lowest and highest (the spread). A metric the
// run did not measure is absent.
type Figures struct {
	Name   string             `json:"name"`
	Median map[string]float64 `json:"median"`
	Min    map[string]float64 `json:"min"`
	Max    map[string]float64 `json:"max"`
	// Real, for a point confirmed on real backends (--confirm), is the
	// real run's figures, beside the predicted ones; absent otherwise.
	Real map[string]float64 `json:"real,omitempty"`
	// Aborted is true when an abort condition stopped the strategy, or
	// skipped it, in a run of the point: its figures (none when skipped
	// in every run) are what was measured until then.
	Aborted bool `json:"aborted,omitempty"`
}

// Knee is one strategy's capacity under the bound: the highest rate at
// which it holds, at every rate up to it.
type Knee struct {
	Strategy string `json:"strategy"`
	// Group holds the other parameters' values (absent when rate is the
	// only one).
	Group map[string]string `json:"group,omitempty"`
	// Rate is the knee, nil when the bound fails at the lowest rate.
	Rate *float64 `json:"rate"`
	// Beyond is true when the bound held at every rate swept: the knee
	// is past the highest.
	Beyond bool `json:"beyond,omitempty"`
	// Partial is true when the walk up the rates stopped at a rate whose
	// point has not run (yet) all its runs: the knee is at least Rate
	// (--resume finishes the sweep).
	Partial bool `json:"partial,omitempty"`
}

// result gathers the runs into a Result.
func (c Config) result(points []Point, runs [][]*reports.Summary) *Result {
	r := &Result{Schema: Schema, Experiment: c.Exp.Name, Engine: c.EngineName, Vary: c.Varies, Repeat: c.Repeat, KeyMetric: c.Exp.KeyMetric}
	for _, d := range c.Grid.Dims {
		r.Dims = append(r.Dims, DimOut{Name: d.Name, Values: d.Values, Strategy: d.InTemplate})
	}
	if c.Bound != nil {
		r.Bound = c.Bound.String()
	}
	for i, p := range points {
		pr := PointResult{ID: p.ID, Dir: p.Dir(), Params: c.Grid.Params(p), Strategies: []Figures{}}
		var done []*reports.Summary
		for _, s := range runs[i] {
			if s != nil {
				done = append(done, s)
			}
		}
		pr.Runs = len(done)
		// The strategies in run order, those an abort skipped too.
		var names []string
		aborted := map[string]bool{}
		for _, s := range done {
			for _, st := range s.Strategies {
				if !slices.Contains(names, st.Name) {
					names = append(names, st.Name)
				}
			}
			if a := s.Abort; a != nil {
				if pr.Aborted == "" {
					pr.Aborted = a.Text()
				}
				aborted[a.Strategy] = true
				for _, name := range a.Skipped {
					aborted[name] = true
					if !slices.Contains(names, name) {
						names = append(names, name)
					}
				}
			}
		}
		for _, name := range names {
			f := figures(name, done)
			f.Aborted = aborted[name]
			pr.Strategies = append(pr.Strategies, f)
		}
		r.Points = append(r.Points, pr)
	}
	r.Knees = kneesOf(r, c.Bound)
	return r
}

// figures is strategy name's metrics over runs.
func figures(name string, runs []*reports.Summary) Figures {
	f := Figures{Name: name, Median: map[string]float64{}, Min: map[string]float64{}, Max: map[string]float64{}}
	for _, m := range reports.Metrics() {
		var vs []float64
		for _, s := range runs {
			for i := range s.Strategies {
				if st := &s.Strategies[i]; st.Name == name {
					if v, ok := reports.Value(st, m); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
						vs = append(vs, v)
					}
				}
			}
		}
		if len(vs) == 0 {
			continue
		}
		sp := reports.NewSpread(vs)
		f.Median[m], f.Min[m], f.Max[m] = sp.Median, sp.Min, sp.Max
	}
	return f
}

// kneesOf finds, for a sweep over the rate with a bound, each strategy's
// knee per combination of the other parameters (a group). The walk goes up
// the grid's rates: a rate whose point has not run all its runs ends it,
// the knee partial; so does a failing one: the bound broken, the metric
// missing, or the strategy stopped or skipped by an abort.
func kneesOf(r *Result, b *Bound) []Knee {
	ri := slices.IndexFunc(r.Dims, func(d DimOut) bool { return d.Name == "rate" && !d.Strategy })
	if b == nil || ri < 0 {
		return nil
	}
	rates := make([]float64, 0, len(r.Dims[ri].Values))
	for _, v := range r.Dims[ri].Values {
		x, _ := strconv.ParseFloat(v, 64)
		rates = append(rates, x)
	}
	slices.Sort(rates)
	type group struct {
		params map[string]string
		at     map[float64]*PointResult
		names  []string
	}
	var order []string
	groups := map[string]*group{}
	for i := range r.Points {
		p := &r.Points[i]
		params := map[string]string{}
		key := ""
		for _, d := range r.Dims {
			if d.Name != "rate" && len(d.Values) > 1 { // a setting of one value is no group
				params[d.Name] = p.Params[d.Name]
				key += d.Name + "=" + p.Params[d.Name] + " "
			}
		}
		g := groups[key]
		if g == nil {
			g = &group{params: params, at: map[float64]*PointResult{}}
			groups[key] = g
			order = append(order, key)
		}
		rate, _ := strconv.ParseFloat(p.Params["rate"], 64)
		g.at[rate] = p
		for _, f := range p.Strategies {
			if !slices.Contains(g.names, f.Name) {
				g.names = append(g.names, f.Name)
			}
		}
	}
	var out []Knee
	for _, key := range order {
		g := groups[key]
		for _, name := range g.names {
			kn := Knee{Strategy: name, Beyond: true}
			if len(g.params) > 0 {
				kn.Group = g.params
			}
			for _, rate := range rates {
				p := g.at[rate]
				if p == nil || p.Runs < r.Repeat {
					kn.Beyond, kn.Partial = false, true
					break
				}
				k := slices.IndexFunc(p.Strategies, func(f Figures) bool { return f.Name == name })
				if k < 0 {
					kn.Beyond = false
					break
				}
				f := p.Strategies[k]
				v, ok := f.Median[b.Metric]
				if f.Aborted || !ok || !b.Holds(v) {
					kn.Beyond = false
					break
				}
				kn.Rate = new(rate)
			}
			out = append(out, kn)
		}
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

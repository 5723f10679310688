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
		if len(done) > 0 {
			for _, st := range done[0].Strategies {
				pr.Strategies = append(pr.Strategies, figures(st.Name, done))
			}
		}
		r.Points = append(r.Points, pr)
	}
	r.Knees = c.knees(r)
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

// knees finds, for a sweep over the rate with a bound, each strategy's
// knee per combination of the other parameters.
func (c Config) knees(r *Result) []Knee {
	if c.Bound == nil || !c.Grid.varies("rate") {
		return nil
	}
	type key struct{ strategy, group string }
	type series struct {
		group map[string]string
		pts   []struct {
			rate float64
			ok   bool
		}
	}
	var order []key
	all := map[key]*series{}
	for _, p := range r.Points {
		rate, _ := strconv.ParseFloat(p.Params["rate"], 64)
		group := map[string]string{}
		gk := ""
		for _, d := range c.Grid.Dims {
			if d.Name != "rate" && len(d.Values) > 1 { // a setting of one value is no group
				group[d.Name] = p.Params[d.Name]
				gk += d.Name + "=" + p.Params[d.Name] + " "
			}
		}
		for _, f := range p.Strategies {
			k := key{f.Name, gk}
			s := all[k]
			if s == nil {
				s = &series{group: group}
				all[k] = s
				order = append(order, k)
			}
			v, ok := f.Median[c.Bound.Metric]
			s.pts = append(s.pts, struct {
				rate float64
				ok   bool
			}{rate, ok && c.Bound.Holds(v)})
		}
	}
	var out []Knee
	for _, k := range order {
		s := all[k]
		slices.SortFunc(s.pts, func(a, b struct {
			rate float64
			ok   bool
		}) int {
			return cmpFloat(a.rate, b.rate)
		})
		kn := Knee{Strategy: k.strategy}
		if len(s.group) > 0 {
			kn.Group = s.group
		}
		kn.Beyond = true
		for _, p := range s.pts {
			if !p.ok {
				kn.Beyond = false
				break
			}
			kn.Rate = new(p.rate)
		}
		out = append(out, kn)
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

package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// Grid is a sweep's dimensions and its strategy template, if any.
type Grid struct {
	Dims     []Dim
	Template *Template // nil: every point runs the experiment's strategies
}

// ParseGrid parses the --vary arguments, in order. At most one may be a
// strategy template; a dimension may not be varied twice.
func ParseGrid(varies []string) (*Grid, error) {
	if len(varies) == 0 {
		return nil, fmt.Errorf("--vary: give at least one, e.g. --vary rate=1000..8000:8")
	}
	g := &Grid{}
	for _, v := range varies {
		dims, t, err := ParseVary(v)
		if err != nil {
			return nil, err
		}
		if t != nil {
			if g.Template != nil {
				return nil, fmt.Errorf("--vary %s: one strategy template per sweep; %s is already one (put both parameters in braces in one spec)", v, g.Template.Text)
			}
			g.Template = t
		}
		for _, d := range dims {
			for _, have := range g.Dims {
				if have.Name == d.Name {
					return nil, fmt.Errorf("--vary %s: %s is already varied", v, d.Name)
				}
			}
			g.Dims = append(g.Dims, d)
		}
	}
	if n := g.Size(); n > MaxPoints {
		return nil, fmt.Errorf("--vary: %d points; a sweep has at most %d", n, MaxPoints)
	}
	return g, nil
}

// MaxPoints bounds a sweep's points.
const MaxPoints = 10000

// Size is how many points the grid has: the product of its dimensions'
// values.
func (g *Grid) Size() int {
	n := 1
	for _, d := range g.Dims {
		n *= len(d.Values)
		if n > MaxPoints {
			return n
		}
	}
	return n
}

// A Point is one combination of the dimensions' values.
type Point struct {
	ID     int      // from 1, in grid order
	Values []string // by dimension
}

// Dir is the point's folder under the sweep's.
func (p Point) Dir() string { return fmt.Sprintf("point-%03d", p.ID) }

// Points lists the grid's points: the first dimension varies slowest.
func (g *Grid) Points() []Point {
	pts := make([]Point, 0, g.Size())
	idx := make([]int, len(g.Dims))
	for {
		p := Point{ID: len(pts) + 1, Values: make([]string, len(g.Dims))}
		for i, d := range g.Dims {
			p.Values[i] = d.Values[idx[i]]
		}
		pts = append(pts, p)
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(g.Dims[k].Values) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return pts
		}
	}
}

// Label names p's values, e.g. "rate=1000 faults=on".
func (g *Grid) Label(p Point) string {
	parts := make([]string, len(g.Dims))
	for i, d := range g.Dims {
		parts[i] = d.Name + "=" + p.Values[i]
	}
	return strings.Join(parts, " ")
}

// Params maps each dimension's name to p's value.
func (g *Grid) Params(p Point) map[string]string {
	m := make(map[string]string, len(g.Dims))
	for i, d := range g.Dims {
		m[d.Name] = p.Values[i]
	}
	return m
}

// Check checks the grid against exp and a sweep's repeat, and applies
// every point: it refuses a dimension that would change nothing (faults
// on an experiment without faults, cross_zone_latency without zones), a
// seed dimension with repeat > 1 (whose runs set the seed themselves), and
// a point the experiment refuses. It returns the experiment at each point
// of Points, in order. The errors name the --vary or the point.
func (g *Grid) Check(exp *experiments.Experiment, repeat int) ([]*experiments.Experiment, error) {
	for _, d := range g.Dims {
		if d.InTemplate {
			continue
		}
		switch {
		case d.Name == "seed" && repeat > 1:
			return nil, fmt.Errorf("--vary %s: --repeat %d runs each point with seeds SEED, SEED+1, ..., and the seed dimension sets the seed itself; give one or the other", d.Arg, repeat)
		case d.Name == "cross_zone_latency" && len(exp.Zones) == 0:
			return nil, fmt.Errorf("--vary %s: %s has no zones (zones:), so cross_zone_latency changes nothing", d.Arg, exp.Name)
		case d.Name == "faults" && !slices.ContainsFunc(exp.Faults, func(f experiments.Fault) bool { return !f.Warmup }):
			return nil, fmt.Errorf("--vary %s: %s has no faults (besides instances' warm-ups), so faults=on and faults=off run the same", d.Arg, exp.Name)
		}
	}
	points := g.Points()
	exps := make([]*experiments.Experiment, len(points))
	for i, p := range points {
		e, err := g.Apply(exp, p)
		if err != nil {
			return nil, err
		}
		exps[i] = e
	}
	return exps, nil
}

// Apply returns exp at point p: its settings set, its strategies the
// template's filled in (when the grid has one), its expectations left out
// (a sweep judges by its own bound). faults=off drops every fault but the
// warm-ups of joining instances, which are the instances' own. The error
// names the point.
func (g *Grid) Apply(exp *experiments.Experiment, p Point) (*experiments.Experiment, error) {
	var o experiments.Overrides
	later := map[string]string{}
	vals := g.Params(p)
	for i, d := range g.Dims {
		if d.InTemplate {
			continue
		}
		v := p.Values[i]
		switch d.Name {
		case "rate":
			o.Rate, _ = strconv.ParseFloat(v, 64)
		case "duration":
			o.Duration, _ = time.ParseDuration(v)
		case "instances":
			o.Instances, _ = strconv.Atoi(v)
		case "seed":
			s, _ := strconv.ParseUint(v, 10, 64)
			o.Seed = &s
		default:
			later[d.Name] = v
		}
	}
	if g.Template != nil {
		o.Strategies = []string{g.Template.Fill(vals)}
	}
	c, err := exp.Apply(o)
	if err != nil {
		return nil, fmt.Errorf("point %d (%s): %w", p.ID, g.Label(p), err)
	}
	for name, v := range later {
		switch name {
		case "timeout":
			c.Timeout, _ = time.ParseDuration(v)
		case "cross_zone_latency":
			c.CrossZoneLatency, _ = time.ParseDuration(v)
		case "replicas":
			c.Replicas, _ = strconv.Atoi(v)
		case "workers":
			// Every instance's workers, a group's too.
			w, _ := strconv.Atoi(v)
			c.Instances.Workers = w
			c.Instances.Each = slices.Clone(c.Instances.Each)
			for i := range c.Instances.Each {
				c.Instances.Each[i].Workers = w
			}
		case "faults":
			if v == "off" {
				// Apply gave c a copy of the faults.
				c.Faults = slices.DeleteFunc(c.Faults, func(f experiments.Fault) bool { return !f.Warmup })
			}
		}
	}
	c.Expect = nil
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("point %d (%s): %w", p.ID, g.Label(p), err)
	}
	return c, nil
}

package sweep

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/lbchaos/lbchaos/reports"
)

// PlotFile is the file of metric m's plot in a sweep's folder.
func PlotFile(m string) string { return "sweep-" + m + ".png" }

// plotMetrics are the metrics a sweep plots: its key metric, p99 and the
// error ratio.
func (r *Result) plotMetrics() []string {
	out := []string{r.KeyMetric}
	for _, m := range []string{"p99_ms", "error_ratio"} {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// xDim is the dimension the plots put on the x axis: rate when it is
// varied, else the first of more than one value whose values are all
// numbers (or durations), on/off dimensions left out; -1 when none is.
func (r *Result) xDim() int {
	numeric := func(d DimOut) bool {
		if len(d.Values) < 2 {
			return false
		}
		for _, v := range d.Values {
			if v == "on" || v == "off" || math.IsNaN(Numeric(v)) {
				return false
			}
		}
		return true
	}
	if i := slices.IndexFunc(r.Dims, func(d DimOut) bool { return d.Name == "rate" && !d.Strategy && numeric(d) }); i >= 0 {
		return i
	}
	return slices.IndexFunc(r.Dims, numeric)
}

// durations reports whether a value of d is a duration (the axis is then
// in milliseconds).
func (d DimOut) durations() bool {
	return slices.ContainsFunc(d.Values, func(v string) bool {
		_, dur, err := number(v)
		return err == nil && dur
	})
}

// curve is one line of a plot: a strategy (or a strategy template's
// other parameters) at the other dimensions' values.
type curve struct {
	label          string
	color, variant int // the strategy's colour; which combination of the other dimensions (dashes)
	xs, ys, lo, hi []float64
	real           plotter.XYs // confirmed points
}

// plots draws one plot per plotMetrics against the x dimension, a line
// per strategy and combination of the other dimensions, the spread of
// repeated runs as a band, the bound (when it is on that metric) as a
// dashed line, and real confirmed points as crosses. It returns the files
// written; none when no dimension is numeric.
func plots(dir string, r *Result) ([]string, error) {
	x := r.xDim()
	if x < 0 {
		return nil, nil
	}
	xd := r.Dims[x]
	var files []string
	for _, m := range r.plotMetrics() {
		curves := r.curves(x, m)
		if len(curves) == 0 {
			continue
		}
		p := plot.New()
		mt, _ := reports.LookupMetric(m)
		p.Title.Text = fmt.Sprintf("%s: %s by %s", r.Experiment, mt.Label, xd.Name)
		p.X.Label.Text = xd.Name
		if xd.durations() {
			p.X.Label.Text += " (ms)"
		}
		p.Y.Label.Text = mt.Head
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
		logY := mt.Kind == reports.KindMilliseconds && positive(curves)
		if logY {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
			p.Y.Label.Text += " (log scale)"
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range curves {
			col := plotutil.Color(c.color)
			lo, hi = min(lo, c.xs[0]), max(hi, c.xs[len(c.xs)-1])
			if r.Repeat > 1 {
				band := make(plotter.XYs, 0, 2*len(c.xs))
				for k := range c.xs {
					band = append(band, plotter.XY{X: c.xs[k], Y: scale(m, c.lo[k])})
				}
				for k := len(c.xs) - 1; k >= 0; k-- {
					band = append(band, plotter.XY{X: c.xs[k], Y: scale(m, c.hi[k])})
				}
				if poly, err := plotter.NewPolygon(band); err == nil {
					rr, g, b, _ := col.RGBA()
					poly.Color = color.NRGBA{uint8(rr >> 8), uint8(g >> 8), uint8(b >> 8), 0x40}
					poly.LineStyle.Width = 0
					p.Add(poly)
				}
			}
			pts := make(plotter.XYs, len(c.xs))
			for k := range c.xs {
				pts[k] = plotter.XY{X: c.xs[k], Y: scale(m, c.ys[k])}
			}
			line, dots, err := plotter.NewLinePoints(pts)
			if err != nil {
				return files, err
			}
			line.Color, dots.Color = col, col
			if c.variant > 0 {
				line.Dashes = []vg.Length{vg.Points(6), vg.Points(3 * float64(c.variant))}
			}
			p.Add(line, dots)
			p.Legend.Add(c.label, line)
			if len(c.real) > 0 {
				for k := range c.real {
					c.real[k].Y = scale(m, c.real[k].Y)
				}
				sc, err := plotter.NewScatter(c.real)
				if err != nil {
					return files, err
				}
				sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = col, plotutil.Shape(4), vg.Points(4)
				p.Add(sc)
			}
		}
		if r.confirmed() {
			sc, err := plotter.NewScatter(plotter.XYs{})
			if err == nil {
				sc.GlyphStyle.Shape, sc.GlyphStyle.Radius, sc.GlyphStyle.Color = plotutil.Shape(4), vg.Points(4), color.Gray{0x40}
				p.Legend.Add("real run (process backends)", sc)
			}
		}
		if r.Bound != "" && strings.HasPrefix(r.Bound, m+" ") {
			b, err := ParseBound(r.Bound)
			if err == nil {
				l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: scale(m, b.Value)}, {X: hi, Y: scale(m, b.Value)}})
				if err == nil {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
					l.Color = color.Gray{0x60}
					p.Add(l)
					p.Legend.Add("bound "+r.Bound, l)
				}
			}
		}
		file := PlotFile(m)
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, file)); err != nil {
			return files, err
		}
		files = append(files, file)
	}
	return files, nil
}

// scale shows a ratio as a percentage.
func scale(m string, v float64) float64 {
	if mt, ok := reports.LookupMetric(m); ok && mt.Kind == reports.KindRatio {
		return 100 * v
	}
	return v
}

// curves groups r's figures of metric m into lines over dimension x.
func (r *Result) curves(x int, m string) []*curve {
	var order []string
	byKey := map[string]*curve{}
	colors, variants := map[string]int{}, map[string]int{}
	template := slices.ContainsFunc(r.Dims, func(d DimOut) bool { return d.Strategy })
	for _, p := range r.Points {
		var other []string
		for i, d := range r.Dims {
			if i != x && len(d.Values) > 1 { // a setting of one value names no line
				other = append(other, d.Name+"="+p.Params[d.Name])
			}
		}
		xv := Numeric(p.Params[r.Dims[x].Name])
		for _, f := range p.Strategies {
			label := strings.Join(other, " ")
			if !template {
				label = strings.TrimSpace(f.Name + " " + label)
			}
			if label == "" {
				label = r.Dims[x].Name
			}
			c := byKey[label]
			if c == nil {
				group := strings.Join(other, " ")
				if _, ok := colors[f.Name]; !ok {
					colors[f.Name] = len(colors)
				}
				if _, ok := variants[group]; !ok {
					variants[group] = len(variants)
				}
				c = &curve{label: label, color: colors[f.Name], variant: variants[group]}
				if template {
					c.color, c.variant = variants[group], 0
				}
				byKey[label] = c
				order = append(order, label)
			}
			v, ok := f.Median[m]
			if !ok {
				continue
			}
			c.xs, c.ys, c.lo, c.hi = append(c.xs, xv), append(c.ys, v), append(c.lo, f.Min[m]), append(c.hi, f.Max[m])
			if rv, ok := f.Real[m]; ok {
				c.real = append(c.real, plotter.XY{X: xv, Y: rv})
			}
		}
	}
	var out []*curve
	for _, k := range order {
		if c := byKey[k]; len(c.xs) > 0 {
			c.sortByX()
			out = append(out, c)
		}
	}
	return out
}

// sortByX puts c's points in the order of x, as a line draws them.
func (c *curve) sortByX() {
	idx := make([]int, len(c.xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(c.xs[a], c.xs[b]) })
	pick := func(v []float64) []float64 {
		out := make([]float64, len(idx))
		for i, k := range idx {
			out[i] = v[k]
		}
		return out
	}
	c.xs, c.ys, c.lo, c.hi = pick(c.xs), pick(c.ys), pick(c.lo), pick(c.hi)
	slices.SortStableFunc(c.real, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
}

// positive reports whether every value of the curves is above 0, as a
// log scale needs.
func positive(cs []*curve) bool {
	for _, c := range cs {
		for k := range c.ys {
			if !(c.ys[k] > 0 && c.lo[k] > 0) {
				return false
			}
		}
		for _, p := range c.real {
			if !(p.Y > 0) {
				return false
			}
		}
	}
	return true
}

package reports

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// percentileTicks label the percentile axis, whose data coordinate is
// 1/(1−p/100): 50 → 2, 90 → 10, 99 → 100, ...
var percentileTicks = []struct {
	x     float64
	label string
}{{2, "50"}, {10, "90"}, {100, "99"}, {1000, "99.9"}, {1e4, "99.99"}, {1e5, "99.999"}, {1e6, "99.9999"}}

// percentileX maps a percentile in (0, 100) to the axis coordinate
// 1/(1−p/100).
func percentileX(p float64) float64 { return 1 / (1 - p/100) }

// percentileFigure plots every strategy's latency-by-percentile curve on
// one chart, as HdrHistogram does: x is the percentile on a log scale of
// 1/(1−p), y the latency on a log scale. The maximum (percentile 100) is a
// marker at the right edge, joined to its curve by a dotted line. Curves
// are drawn in the Summary's order, each narrower than the one before, so
// curves that coincide stay visible. Points
// below the 50th percentile, non-positive latencies and strategies without
// points are skipped. It returns nil when no strategy has a point.
func percentileFigure(s *Summary) *figure {
	type curve struct {
		idx  int
		name string
		xys  plotter.XYs
		max  float64 // latency at 100, or NaN
	}
	var curves []curve
	xHi := 100.0 // show at least up to p99
	yLo, yHi := math.Inf(1), math.Inf(-1)
	for i := range s.Strategies {
		st := &s.Strategies[i]
		c := curve{idx: i, name: st.Name, max: math.NaN()}
		for _, pt := range st.Percentiles {
			if !finite(pt.Percentile) || !finite(pt.LatencyMs) || pt.LatencyMs <= 0 || pt.Percentile < 50 {
				continue
			}
			if pt.Percentile >= 100 {
				c.max = pt.LatencyMs
			} else {
				x := percentileX(pt.Percentile)
				c.xys = append(c.xys, plotter.XY{X: x, Y: pt.LatencyMs})
				xHi = math.Max(xHi, x)
			}
			yLo, yHi = math.Min(yLo, pt.LatencyMs), math.Max(yHi, pt.LatencyMs)
		}
		if len(c.xys) > 0 || !math.IsNaN(c.max) {
			curves = append(curves, c)
		}
	}
	if len(curves) == 0 {
		return nil
	}
	xHi = math.Min(xHi, 1e6)
	xMax := xHi * 3 // the right edge, where maxima are drawn
	yLo, yHi = yLo/1.3, yHi*1.3

	f := &figure{legend: newLegend(), w: figWidth, h: 5*vg.Inch + vg.Length(len(curves)+2)*0.2*vg.Inch, legendBelow: true}
	p := plot.New()
	p.Title.Text = "Latency by percentile, all strategies (every request, failed ones included)"
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "percentile (%), log scale of 1/(1 − p)"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	var ticks []plot.Tick
	for _, t := range percentileTicks {
		if t.x <= xHi*1.0001 {
			ticks = append(ticks, plot.Tick{Value: t.x, Label: t.label})
		}
	}
	ticks = append(ticks, plot.Tick{Value: xMax, Label: "max"})
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())

	thresh := draw.LineStyle{Color: gray(0x55), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}
	showThresh := s.SlowThresholdMs > yLo && s.SlowThresholdMs < yHi
	if showThresh {
		p.Add(&hline{y: s.SlowThresholdMs, style: thresh})
	}
	anyMax := false
	for i, c := range curves {
		// Earlier curves are drawn wider, so identical curves show as
		// nested stripes instead of hiding one another.
		w := vg.Points(2 + 1.2*float64(len(curves)-1-i))
		sty := draw.LineStyle{Color: strategyColor(c.idx), Width: w}
		var thumb plot.Thumbnailer
		switch len(c.xys) {
		case 0:
		case 1:
			sc := &plotter.Scatter{XYs: c.xys, GlyphStyle: draw.GlyphStyle{Color: sty.Color, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}}
			p.Add(sc)
			thumb = sc
		default:
			l := &plotter.Line{XYs: c.xys, LineStyle: sty}
			p.Add(l)
			thumb = l
		}
		if !math.IsNaN(c.max) {
			anyMax = true
			mx := plotter.XYs{{X: xMax, Y: c.max}}
			if n := len(c.xys); n > 0 {
				dotted := sty
				dotted.Width = vg.Points(1)
				dotted.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
				p.Add(&plotter.Line{XYs: plotter.XYs{c.xys[n-1], mx[0]}, LineStyle: dotted})
			}
			sc := &plotter.Scatter{XYs: mx, GlyphStyle: draw.GlyphStyle{Color: sty.Color, Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}}
			p.Add(sc)
			if thumb == nil {
				thumb = sc
			}
		}
		f.addLegend(c.name, thumb)
	}
	if showThresh {
		f.addLegend("slow threshold "+fmtNum(s.SlowThresholdMs)+" ms", &hline{style: thresh})
	}
	if anyMax {
		f.addLegend("maximum (right edge)", &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: gray(0x33), Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}})
	}
	p.X.Min, p.X.Max = 2, xMax
	p.Y.Min, p.Y.Max = yLo, yHi
	f.panels = []*plot.Plot{p}
	return f
}

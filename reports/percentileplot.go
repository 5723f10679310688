package reports

import (
	"image/color"
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

// percentileCurves picks the curves a percentile figure draws: the
// successful requests' (PercentilesOK) when any strategy has them, else
// every request's (Percentiles, from a summary written before the split),
// and the failed requests' (PercentilesFailed) for a second panel.
type percentileCurves struct {
	title string
	of    func(*Strategy) []PercentilePoint
}

// percentileFigure plots every strategy's latency-by-percentile curve, as
// HdrHistogram does: x is the percentile on a log scale of 1/(1−p), y the
// latency on a log scale. The top panel has the successful requests'
// curves, so that a strategy whose requests fail fast is not drawn as
// fast; the bottom one, when any request failed, the failed requests'.
// (A summary without the split gets one panel of every request's curve,
// so titled.) Each strategy keeps its colour, dash pattern and glyph
// (strategyStyles); the glyphs sit on every third point, staggered by
// strategy, so coinciding curves stay visible. The maximum (percentile
// 100) is a ring at the right edge, joined to its curve by a dotted line.
// Points below the 50th percentile, non-positive latencies and strategies
// without points are skipped. It returns nil when no strategy has a point.
func percentileFigure(s *Summary) *figure {
	split := false
	for i := range s.Strategies {
		if len(s.Strategies[i].PercentilesOK) > 0 || len(s.Strategies[i].PercentilesFailed) > 0 {
			split = true
		}
	}
	panels := []percentileCurves{{"Latency by percentile of every request, failed ones included", func(st *Strategy) []PercentilePoint { return st.Percentiles }}}
	if split {
		panels = []percentileCurves{
			{"Latency by percentile of successful requests (2xx)", func(st *Strategy) []PercentilePoint { return st.PercentilesOK }},
			{"Latency by percentile of failed requests (a timeout counts as its timeout)", func(st *Strategy) []PercentilePoint { return st.PercentilesFailed }},
		}
	}
	f := &figure{w: figWidth}
	styles := summaryStyles(s)
	legend := map[int]bool{}
	var maxCols []color.Color // of the strategies with a maximum drawn
	anyThresh := false
	for _, pc := range panels {
		p, drawn, maxOf, thresh := percentilePanel(s, styles, pc)
		if p == nil {
			continue
		}
		f.panels = append(f.panels, p)
		f.h += 5 * vg.Inch
		for _, i := range drawn {
			legend[i] = true
		}
		for _, i := range maxOf {
			maxCols = appendColor(maxCols, styles[i].Color)
		}
		anyThresh = anyThresh || thresh
	}
	if len(f.panels) == 0 {
		return nil
	}
	for i := range s.Strategies {
		if legend[i] {
			f.addLegend(s.Strategies[i].Name, strategyThumb(styles[i]))
		}
	}
	if anyThresh {
		f.addLegend("slow threshold "+fmtNum(s.SlowThresholdMs)+" ms", &hline{style: threshStyle})
	}
	if len(maxCols) > 0 {
		f.addLegend("maximum (right edge, strategy colour)", &glyphRow{style: maxMark(nil), colors: maxCols})
	}
	return f
}

var threshStyle = draw.LineStyle{Color: gray(0x55), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}

// strategyLineW is the width of a strategy's line in cross-strategy plots.
const strategyLineW = 1.8 // points

// strategyThumb is the legend thumbnail of a strategy drawn in style st:
// its line with its glyph, as percentilePanel draws them.
func strategyThumb(st StrategyStyle) plot.Thumbnailer {
	return thumbs{
		&plotter.Line{LineStyle: st.line(vg.Points(strategyLineW))},
		&glyphThumb{style: st.glyph(vg.Points(3.5))},
	}
}

// thumbs draws several thumbnails on top of one another.
type thumbs []plot.Thumbnailer

// Thumbnail implements plot.Thumbnailer.
func (ts thumbs) Thumbnail(c *draw.Canvas) {
	for _, t := range ts {
		t.Thumbnail(c)
	}
}

// glyphThumb is a glyph at the centre of a thumbnail.
type glyphThumb struct{ style draw.GlyphStyle }

// Thumbnail implements plot.Thumbnailer.
func (g *glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(g.style, c.Center())
}

// maxMark is the ring marking a strategy's maximum.
func maxMark(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}
}

// percentilePanel draws one panel of percentileFigure; nil when no
// strategy has a point. drawn lists the strategies drawn, maxOf those
// with a maximum.
func percentilePanel(s *Summary, styles []StrategyStyle, pc percentileCurves) (p *plot.Plot, drawn, maxOf []int, showThresh bool) {
	type curve struct {
		idx int
		xys plotter.XYs
		max float64 // latency at 100, or NaN
	}
	var curves []curve
	xHi := 100.0 // show at least up to p99
	yLo, yHi := math.Inf(1), math.Inf(-1)
	for i := range s.Strategies {
		c := curve{idx: i, max: math.NaN()}
		for _, pt := range pc.of(&s.Strategies[i]) {
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
		return nil, nil, nil, false
	}
	xHi = math.Min(xHi, 1e6)
	xMax := xHi * 3 // the right edge, where maxima are drawn
	yLo, yHi = yLo/1.3, yHi*1.3

	p = plot.New()
	p.Title.Text = pc.title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "percentile (%), log scale of 1/(1 − p)"
	p.Y.Label.Text = latencyAxisLabel("latency")
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

	showThresh = s.SlowThresholdMs > yLo && s.SlowThresholdMs < yHi
	if showThresh {
		p.Add(&hline{y: s.SlowThresholdMs, style: threshStyle})
	}
	// Glyphs go on top of every line, so that a curve hidden under
	// another still shows its own.
	var glyphs []plot.Plotter
	for _, c := range curves {
		st := styles[c.idx]
		sty := st.line(vg.Points(strategyLineW))
		if len(c.xys) > 1 {
			p.Add(&plotter.Line{XYs: c.xys, LineStyle: sty})
		}
		// Glyphs on every third point, staggered by strategy.
		var marks plotter.XYs
		for j, xy := range c.xys {
			if len(c.xys) == 1 || (j+c.idx)%3 == 0 {
				marks = append(marks, xy)
			}
		}
		if len(marks) > 0 {
			glyphs = append(glyphs, &plotter.Scatter{XYs: marks, GlyphStyle: st.glyph(vg.Points(3.5))})
		}
		if !math.IsNaN(c.max) {
			maxOf = append(maxOf, c.idx)
			mx := plotter.XYs{{X: xMax, Y: c.max}}
			if n := len(c.xys); n > 0 {
				dotted := sty
				dotted.Width = vg.Points(1)
				dotted.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
				p.Add(&plotter.Line{XYs: plotter.XYs{c.xys[n-1], mx[0]}, LineStyle: dotted})
			}
			p.Add(&plotter.Scatter{XYs: mx, GlyphStyle: maxMark(st.Color)})
		}
		drawn = append(drawn, c.idx)
	}
	p.Add(glyphs...)
	p.X.Min, p.X.Max = 2, xMax
	p.Y.Min, p.Y.Max = yLo, yHi
	return p, drawn, maxOf, showThresh
}

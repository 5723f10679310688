package reports

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// shareFigure plots each instance's share of requests as grouped bars (one
// group per instance, one bar per strategy) with the fair share 1/N as a
// dashed line and faulty instances shaded. It returns nil when no strategy
// reports instances.
func shareFigure(s *Summary) *figure {
	idx := map[int]int{}
	var ids []int
	faulty := map[int]bool{}
	for _, id := range s.FaultyInstances {
		faulty[id] = true
	}
	for _, st := range s.Strategies {
		for _, in := range st.Instances {
			if _, ok := idx[in.ID]; !ok {
				idx[in.ID] = 0
				ids = append(ids, in.ID)
			}
			faulty[in.ID] = faulty[in.ID] || in.Faulty
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	for i, id := range ids {
		idx[id] = i
	}
	n, k := len(ids), len(s.Strategies)

	w := min(16*vg.Inch, max(figWidth, vg.Length(n*k)*0.06*vg.Inch+4*vg.Inch))
	f := &figure{w: w, h: figHeight}
	fairN := instanceCount(s)
	fairLabel := ""
	if fairN > 0 {
		fairLabel = fmt.Sprintf("fair share 1/%d = %s%%", fairN, fmtPct(1/float64(fairN)))
	}
	dataW := w - 1.2*vg.Inch
	barW := max(vg.Points(1), dataW/vg.Length(n)*0.8/vg.Length(k))

	p := plot.New()
	p.Title.Text = "Share of requests per instance, by strategy"
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "instance id"
	p.Y.Label.Text = "share of requests (%)"
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min = 0
	p.Add(&plotter.Grid{Horizontal: plotter.NewGrid().Horizontal})

	var spans [][2]float64
	for i, id := range ids {
		if faulty[id] {
			spans = append(spans, [2]float64{float64(i) - 0.5, float64(i) + 0.5})
		}
	}
	if len(spans) > 0 {
		p.Add(&bands{spans: spans, color: faultShade})
	}

	var ticks []plot.Tick
	every := max(1, (n+24)/25)
	for i, id := range ids {
		label := ""
		if i%every == 0 || faulty[id] {
			label = strconv.Itoa(id)
			if faulty[id] {
				label += "*"
			}
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if len(spans) > 0 {
		p.X.Label.Text = "instance id (* = faulty)"
	}

	styles := summaryStyles(s)
	for j, st := range s.Strategies {
		vals := make(plotter.Values, n)
		for _, in := range st.Instances {
			if v := in.Share * 100; finite(v) {
				vals[idx[in.ID]] = v
			}
		}
		b, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			continue
		}
		sty := styles[j]
		b.Color = sty.Color
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(j)-float64(k-1)/2) * barW
		p.Add(b)
		// The strategy's glyph on top of each bar tells bars apart where
		// colours do not (grey print).
		g := &barGlyphs{vals: vals, offset: b.Offset, style: sty.glyph(min(vg.Points(3), barW/2))}
		p.Add(g)
		f.addLegend(st.Name, &barThumb{color: sty.Color, glyph: g.style})
	}
	if fairN > 0 {
		fair := &hline{y: 100 / float64(fairN), style: draw.LineStyle{Color: gray(0), Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}}
		p.Add(fair)
		f.addLegend(fairLabel, fair)
	}
	if len(spans) > 0 {
		f.addLegend("faulty instance", &bands{color: faultShade})
	}
	if math.IsInf(p.Y.Max, -1) || p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.05
	f.panels = []*plot.Plot{p}
	return f
}

// barGlyphs draws a glyph just above each bar of a bar chart whose bars
// are offset from their x by offset.
type barGlyphs struct {
	vals   plotter.Values
	offset vg.Length
	style  draw.GlyphStyle
}

// Plot implements plot.Plotter.
func (g *barGlyphs) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range g.vals {
		pt := vg.Point{X: trX(float64(i)) + g.offset, Y: trY(v) + g.style.Radius + vg.Points(1)}
		if c.Contains(pt) {
			c.DrawGlyph(g.style, pt)
		}
	}
}

// barThumb is a legend thumbnail of a bar with its glyph beside it.
type barThumb struct {
	color color.Color
	glyph draw.GlyphStyle
}

// Thumbnail implements plot.Thumbnailer.
func (b *barThumb) Thumbnail(c *draw.Canvas) {
	w := c.Max.X - c.Min.X
	c.FillPolygon(b.color, rect(c.Min.X, c.Min.Y, c.Min.X+w*0.6, c.Max.Y))
	c.DrawGlyph(b.glyph, vg.Point{X: c.Max.X - b.glyph.Radius - vg.Points(1), Y: (c.Min.Y + c.Max.Y) / 2})
}

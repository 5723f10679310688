package reports

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// fmtSuccess formats a success ratio in percent, never rounding a ratio
// below 1 up to "100.00".
func fmtSuccess(ratio float64) string {
	v := fmtPct(ratio)
	if ratio < 1 && v == "100.00" {
		return ">99.99"
	}
	return v
}

// successFigure draws each strategy's success ratio (2xx responses /
// requests) as a horizontal bar from 0 to 100%, labelled with its value,
// strategies top to bottom in the Summary's order and coloured as in the
// share plot. Strategies without requests are left out. It returns nil
// when no strategy has requests.
func successFigure(s *Summary) *figure {
	type bar struct {
		idx  int
		name string
		v    float64 // percent
	}
	var bars []bar
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if st.Requests <= 0 || !finite(st.SuccessRatio) {
			continue
		}
		bars = append(bars, bar{i, st.Name, math.Max(0, math.Min(100, 100*st.SuccessRatio))})
	}
	if len(bars) == 0 {
		return nil
	}
	h := max(2.6*vg.Inch, vg.Length(len(bars))*0.45*vg.Inch+1.3*vg.Inch)
	f := &figure{w: figWidth, h: h}
	p := plot.New()
	p.Title.Text = "Success rate by strategy (2xx responses / requests sent)"
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "success rate (%)"
	p.Add(&plotter.Grid{Vertical: plotter.NewGrid().Vertical})

	styles := summaryStyles(s)
	var ticks []plot.Tick
	inside := &plotter.Labels{Offset: vg.Point{X: vg.Points(-5)}}
	outside := &plotter.Labels{Offset: vg.Point{X: vg.Points(5)}}
	barW := min(vg.Points(22), (h-1.3*vg.Inch)/vg.Length(len(bars))*0.7)
	for j, b := range bars {
		ticks = append(ticks, plot.Tick{Value: float64(j), Label: b.name})
		bc, err := plotter.NewBarChart(plotter.Values{b.v}, barW)
		if err != nil {
			continue
		}
		bc.Horizontal = true
		bc.XMin = float64(j)
		bc.Color = styles[b.idx].Color
		bc.LineStyle.Width = 0
		p.Add(bc)

		st := text.Style{Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XRight, YAlign: draw.YCenter, Color: textOn(styles[b.idx].Color)}
		st.Font.Size = vg.Points(11)
		l := inside
		if b.v < 25 {
			// Too short to hold its label: write it to the right of the bar.
			st.XAlign, st.Color = draw.XLeft, gray(0)
			l = outside
		}
		l.XYs = append(l.XYs, plotter.XY{X: b.v, Y: float64(j)})
		l.Labels = append(l.Labels, fmtSuccess(b.v/100)+"%")
		l.TextStyle = append(l.TextStyle, st)
	}
	for _, l := range []*plotter.Labels{inside, outside} {
		if len(l.Labels) > 0 {
			p.Add(l)
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}
	p.Y.Min, p.Y.Max = -0.6, float64(len(bars))-0.4
	p.X.Min, p.X.Max = 0, 100
	f.panels = []*plot.Plot{p}
	return f
}

// textOn is black or white, whichever reads better on background c
// (relative luminance after WCAG 2).
func textOn(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		x := float64(v) / 0xffff
		if x <= 0.03928 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	if 0.2126*lin(r)+0.7152*lin(g)+0.0722*lin(b) > 0.18 {
		return gray(0)
	}
	return gray(0xff)
}

package reports

import (
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func gray(v uint8) color.Color { return color.RGBA{v, v, v, 0xff} }

// bands shades x spans over the full height of the data area. It has no
// data range, so it never widens the axes.
type bands struct {
	spans [][2]float64
	color color.Color
}

// Plot implements plot.Plotter.
func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, s := range b.spans {
		x0 := max(c.Min.X, min(c.Max.X, trX(s[0])))
		x1 := max(c.Min.X, min(c.Max.X, trX(s[1])))
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(b.color, rect(x0, c.Min.Y, x1, c.Max.Y))
	}
}

// Thumbnail implements plot.Thumbnailer.
func (b *bands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, rect(c.Min.X, c.Min.Y, c.Max.X, c.Max.Y))
}

func rect(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

var ejectDashes = []vg.Length{vg.Points(2), vg.Points(2)}

// vlines draws each event as a vertical line across the data area in its
// instance's colour (black for an event of no instance, such as a proxy's
// exit), of the given width and dashes; the legend's sample is in key.
type vlines struct {
	events []Event
	width  vg.Length
	dashes []vg.Length
	key    color.Color
}

// ejectLines marks ejections: thin dotted lines.
func ejectLines(events []Event) *vlines {
	return &vlines{events: events, width: vg.Points(1), dashes: ejectDashes, key: gray(0x33)}
}

// crashLines marks crashes and a proxy's exit: thick solid lines.
func crashLines(events []Event) *vlines {
	return &vlines{events: events, width: vg.Points(2.5), key: gray(0)}
}

// Plot implements plot.Plotter.
func (v *vlines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, e := range v.events {
		x := trX(e.TimeS)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		col := gray(0)
		if e.Instance >= 0 {
			col = instanceColor(e.Instance)
		}
		c.StrokeLine2(draw.LineStyle{Color: col, Width: v.width, Dashes: v.dashes}, x, c.Min.Y, x, c.Max.Y)
	}
}

// Thumbnail implements plot.Thumbnailer.
func (v *vlines) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(draw.LineStyle{Color: v.key, Width: v.width, Dashes: v.dashes}, x, c.Min.Y, x, c.Max.Y)
}

// hline draws a horizontal reference line at y across the data area; its
// data range includes y so the line is always in view.
type hline struct {
	y     float64
	style draw.LineStyle
}

// Plot implements plot.Plotter.
func (h *hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	if y < c.Min.Y || y > c.Max.Y {
		return
	}
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// DataRange implements plot.DataRanger.
func (h *hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), h.y, h.y
}

// Thumbnail implements plot.Thumbnailer.
func (h *hline) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// logTicks marks a log axis of milliseconds at 1, 2 and 5 times powers of
// ten (labelled) and the other integer multiples (unlabelled); when fewer
// than two labelled ticks fall in range, every multiple is labelled. From
// an axis that reaches 10 s, labels from 1 s up read in seconds ("20 s",
// not "20000").
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	var ticks []plot.Tick
	labelled := 0
	secs := hi >= 10000
	label := func(v float64) string {
		if secs && v >= 1000 {
			return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m <= 9; m++ {
			v, _ := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(e), 64)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = label(v)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled < 2 {
		for i := range ticks {
			ticks[i].Label = label(ticks[i].Value)
		}
	}
	return ticks
}

// latencyAxisLabel labels a logTicks axis of milliseconds reaching hi:
// its unit, and where ticks turn to seconds.
func latencyAxisLabel(what string, hi float64) string {
	if hi >= 10000 {
		return what + " (log scale; ms, from 1 s in s)"
	}
	return what + " (ms, log scale)"
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("250", not "250.00").
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(t.Value, 'f', 6, 64), "0"), ".")
		}
	}
	return ticks
}

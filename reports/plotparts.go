package reports

import (
	"cmp"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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
		c.StrokeLine2(draw.LineStyle{Color: eventColor(e), Width: v.width, Dashes: v.dashes}, x, c.Min.Y, x, c.Max.Y)
	}
}

// eventColor is the colour of an event's line: its instance's, black for
// an event of no instance.
func eventColor(e Event) color.Color {
	if e.Instance < 0 {
		return gray(0)
	}
	return instanceColor(e.Instance)
}

// Thumbnail implements plot.Thumbnailer: a line in each colour the plot
// draws (up to maxThumbColors, in the order of the events), or in key
// when there are no events.
func (v *vlines) Thumbnail(c *draw.Canvas) {
	var cols []color.Color
	for _, e := range v.events {
		cols = appendColor(cols, eventColor(e))
	}
	if len(cols) == 0 {
		cols = []color.Color{v.key}
	}
	w := c.Max.X - c.Min.X
	for i, col := range cols {
		x := c.Min.X + w*vg.Length(2*i+1)/vg.Length(2*len(cols))
		c.StrokeLine2(draw.LineStyle{Color: col, Width: v.width, Dashes: v.dashes}, x, c.Min.Y, x, c.Max.Y)
	}
}

// maxThumbColors is the most colours a legend thumbnail shows.
const maxThumbColors = 4

// appendColor appends col to cols unless it is there already or cols is
// full.
func appendColor(cols []color.Color, col color.Color) []color.Color {
	if len(cols) >= maxThumbColors || slices.ContainsFunc(cols, func(c color.Color) bool { return sameColor(c, col) }) {
		return cols
	}
	return append(cols, col)
}

func sameColor(a, b color.Color) bool {
	r0, g0, b0, a0 := a.RGBA()
	r1, g1, b1, a1 := b.RGBA()
	return r0 == r1 && g0 == g1 && b0 == b1 && a0 == a1
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

// logTicks marks a log axis of milliseconds that is length long (0: not
// yet known, taken as 4 in). It labels the densest of these sets whose
// labels stay minTickGap apart: every integer multiple of a power of ten;
// 1, 2, 3 and 5 times; 1, 2 and 5 times; 1 and 3 times; the powers of
// ten; every second, third, ... power. The other integer multiples get
// unlabelled ticks while a decade is wide enough to tell them apart. An
// axis on which fewer than three labels would fall (a range inside one
// decade) gets gonum's default ticks instead when they have more. Labels
// carry their unit,
// from 1 s up in seconds (msLabel).
type logTicks struct{ length vg.Length }

const (
	// minTickGap is the least distance between two tick labels: twice
	// the tick labels' 10 pt, so a line of space separates them.
	minTickGap = 20 // points
	// minMinorGap is the least width of a decade with minor ticks.
	minMinorGap = 40 // points
)

// logLabelSets are the multipliers logTicks may label, densest first.
var logLabelSets = [][]float64{
	{1, 2, 3, 4, 5, 6, 7, 8, 9},
	{1, 2, 3, 5},
	{1, 2, 5},
	{1, 3},
	{1},
}

// minLogGap is the least distance, in decades, between two labels of set.
func minLogGap(set []float64) float64 {
	g := 1 - math.Log10(set[len(set)-1]) // to the next decade
	for i := 1; i < len(set); i++ {
		g = math.Min(g, math.Log10(set[i]/set[i-1]))
	}
	return g
}

// Ticks implements plot.Ticker.
func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	length := t.length
	if length <= 0 {
		length = 4 * vg.Inch
	}
	decade := length / vg.Length(math.Log10(hi/lo)) // points per decade
	set, every := logLabelSets[len(logLabelSets)-1], 1
	for _, s := range logLabelSets {
		if vg.Length(minLogGap(s))*decade >= vg.Points(minTickGap) {
			set = s
			break
		}
	}
	if decade < vg.Points(minTickGap) {
		every = int(math.Ceil(float64(vg.Points(minTickGap) / decade)))
	}
	var ticks []plot.Tick
	labelled := 0
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m <= 9; m++ {
			v, _ := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(e), 64)
			if v < lo || v > hi {
				continue
			}
			tk := plot.Tick{Value: v}
			if slices.Contains(set, float64(m)) && (m != 1 || e%every == 0) {
				tk.Label = msLabel(v)
				labelled++
			} else if m != 1 && decade < vg.Points(minMinorGap) {
				continue
			}
			ticks = append(ticks, tk)
		}
	}
	if labelled < 3 {
		def := plot.DefaultTicks{}.Ticks(lo, hi)
		n := 0
		for i := range def {
			if def[i].Label != "" {
				def[i].Label = msLabel(def[i].Value)
				n++
			}
		}
		if n > labelled {
			return def
		}
	}
	return ticks
}

// msLabel labels a latency in milliseconds, to six significant digits,
// with its unit: "500 ms", and in seconds from 1 s up ("2 s", not
// "2000").
func msLabel(v float64) string {
	unit := " ms"
	if v >= 1000 {
		v, unit = v/1000, " s"
	}
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return strconv.FormatFloat(v, 'f', -1, 64) + unit
}

// latencyAxisLabel labels a logTicks axis: short, so that it fits the
// height of a panel; the tick labels carry the unit.
func latencyAxisLabel(what string) string { return what + " (log scale)" }

// fitTicks tells each panel's logTicks the length of its y axis, the
// height of its data area in c.
func fitTicks(p *plot.Plot, c draw.Canvas) {
	if t, ok := p.Y.Tick.Marker.(logTicks); ok {
		t.length = p.DataCanvas(c).Size().Y
		p.Y.Tick.Marker = t
	}
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

// edgeMarks draws a glyph at each x a fixed distance above the bottom of
// the data area, whatever the y axis: it marks a time at which there is
// no value to plot. row stacks marks of several series apart.
type edgeMarks struct {
	xs    []float64
	row   int
	style draw.GlyphStyle
}

// edgeMarkRowH is the height of a row of edgeMarks.
func edgeMarkRowH(r vg.Length) vg.Length { return 2*r + vg.Points(2) }

// Plot implements plot.Plotter.
func (m *edgeMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	y := c.Min.Y + vg.Points(2) + m.style.Radius + vg.Length(m.row)*edgeMarkRowH(m.style.Radius)
	for _, x := range m.xs {
		if pt := (vg.Point{X: trX(x), Y: y}); c.ContainsX(pt.X) {
			c.DrawGlyph(m.style, pt)
		}
	}
}

// glyphRow is a legend thumbnail of one glyph per colour, side by side,
// as several series draw it.
type glyphRow struct {
	style  draw.GlyphStyle
	colors []color.Color
}

// Thumbnail implements plot.Thumbnailer.
func (g *glyphRow) Thumbnail(c *draw.Canvas) {
	w := c.Max.X - c.Min.X
	for i, col := range g.colors {
		st := g.style
		st.Color = col
		c.DrawGlyph(st, vg.Point{X: c.Min.X + w*vg.Length(2*i+1)/vg.Length(2*len(g.colors)), Y: c.Center().Y})
	}
}

// lineStack is a legend thumbnail for several series at once: short lines
// in their styles, one above the other.
type lineStack []draw.LineStyle

// Thumbnail implements plot.Thumbnailer.
func (ls lineStack) Thumbnail(c *draw.Canvas) {
	h := c.Max.Y - c.Min.Y
	for i, st := range ls {
		y := c.Max.Y - h*vg.Length(2*i+1)/vg.Length(2*len(ls))
		c.StrokeLine2(st, c.Min.X, y, c.Max.X, y)
	}
}

// seriesLine is one line of a lineSet: its points, in x order, and its
// style. A line of one point is drawn as a dot of the line's width.
type seriesLine struct {
	xys   plotter.XYs
	style draw.LineStyle
}

// lineSet draws lines, later ones on top, so that none hides another:
// where points of several lines at the same x fall within coincideTol of
// one another on screen, they are drawn side by side, lineSpread apart (less
// when many coincide, the group never wider than maxSpread) about their
// mean and in drawing order, so that each line shows a band of its
// colour. Elsewhere every point is drawn where it is.
type lineSet struct {
	lines []seriesLine
}

const (
	coincideTol = 1   // points
	lineSpread  = 1.5 // points
	maxSpread   = 9   // points
)

// Plot implements plot.Plotter.
func (ls *lineSet) Plot(c draw.Canvas, p *plot.Plot) {
	pts := ls.screenPoints(c, p)
	for i, l := range ls.lines {
		if len(pts[i]) == 1 {
			if c.Contains(pts[i][0]) {
				c.DrawGlyph(draw.GlyphStyle{Color: l.style.Color, Radius: l.style.Width, Shape: draw.CircleGlyph{}}, pts[i][0])
			}
			continue
		}
		c.StrokeLines(l.style, c.ClipLinesXY(pts[i])...)
	}
}

// screenPoints returns the points of each line on c, coinciding ones
// spread apart.
func (ls *lineSet) screenPoints(c draw.Canvas, p *plot.Plot) [][]vg.Point {
	trX, trY := p.Transforms(&c)
	type at struct{ line, pt int }
	byX := map[float64][]at{}
	var xs []float64
	pts := make([][]vg.Point, len(ls.lines))
	for i, l := range ls.lines {
		pts[i] = make([]vg.Point, len(l.xys))
		for j, xy := range l.xys {
			pts[i][j] = vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
			if _, ok := byX[xy.X]; !ok {
				xs = append(xs, xy.X)
			}
			byX[xy.X] = append(byX[xy.X], at{i, j})
		}
	}
	for _, x := range xs {
		group := byX[x]
		ys := make([]vg.Length, len(group))
		for k, a := range group {
			ys[k] = pts[a.line][a.pt].Y
		}
		for k, y := range spreadY(ys, c.Min.Y, c.Max.Y) {
			pts[group[k].line][group[k].pt].Y = y
		}
	}
	return pts
}

// spreadY returns ys with each cluster of values within coincideTol of
// its lowest spread apart about the cluster's mean, in the order of ys,
// and moved inside lo to hi if the spreading pushed it out.
func spreadY(ys []vg.Length, lo, hi vg.Length) []vg.Length {
	out := slices.Clone(ys)
	order := make([]int, len(ys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ys[a], ys[b]) })
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && ys[order[end]]-ys[order[start]] < vg.Points(coincideTol) {
			end++
		}
		if m := end - start; m > 1 {
			members := slices.Clone(order[start:end])
			slices.Sort(members) // drawing order
			var mean vg.Length
			for _, k := range members {
				mean += ys[k]
			}
			mean /= vg.Length(m)
			gap := min(vg.Points(lineSpread), vg.Points(maxSpread)/vg.Length(m-1))
			half := gap * vg.Length(m-1) / 2
			if mean-half < lo && mean >= lo {
				mean = min(lo+half, hi)
			} else if mean+half > hi && mean <= hi {
				mean = max(hi-half, lo)
			}
			for r, k := range members {
				out[k] = mean + (vg.Length(r)-vg.Length(m-1)/2)*gap
			}
		}
		start = end
	}
	return out
}

// DataRange implements plot.DataRanger.
func (ls *lineSet) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, l := range ls.lines {
		for _, xy := range l.xys {
			xmin, xmax = math.Min(xmin, xy.X), math.Max(xmax, xy.X)
			ymin, ymax = math.Min(ymin, xy.Y), math.Max(ymax, xy.Y)
		}
	}
	return xmin, xmax, ymin, ymax
}

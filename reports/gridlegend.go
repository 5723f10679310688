package reports

import (
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// gridLegend is a figure's legend, drawn below its panels in as many
// columns as the longest entry allows (at most maxLegendColumns), each
// entry a thumbnail and its label. A label wider than its column wraps
// onto more lines, breaking after punctuation where it can, so no entry
// is ever cut off: the figure grows by the legend's height instead.
type gridLegend struct {
	entries []legendEntry
}

type legendEntry struct {
	label  string
	thumbs []plot.Thumbnailer
}

const (
	maxLegendColumns = 4
	legendThumbW     = 30 // points
	legendGap        = 12 // points between thumbnail and text, and between columns
	legendPad        = 6  // points around the legend
)

// legendFont is the legend's text style.
func legendFont() text.Style {
	return text.Style{
		Color:   gray(0),
		Font:    font.From(plot.DefaultFont, vg.Points(10)),
		Handler: plot.DefaultTextHandler,
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
	}
}

func (g *gridLegend) add(label string, thumbs ...plot.Thumbnailer) {
	g.entries = append(g.entries, legendEntry{label: label, thumbs: thumbs})
}

// legendLayout is where a legend of some width puts its entries.
type legendLayout struct {
	cols  int
	colW  vg.Length
	lines [][]string  // per entry
	rowH  []vg.Length // per row of entries
	lineH vg.Length
}

// layout lays the legend out in width.
func (g *gridLegend) layout(width vg.Length) legendLayout {
	st := legendFont()
	lineH := st.FontExtents().Height * 1.15
	inner := width - 2*vg.Points(legendPad)
	var widest vg.Length
	for _, e := range g.entries {
		widest = max(widest, st.Width(e.label))
	}
	entryW := widest + vg.Points(legendThumbW+legendGap+legendGap)
	cols := min(maxLegendColumns, max(1, int(inner/entryW)), max(1, len(g.entries)))
	colW := inner / vg.Length(cols)
	textW := colW - vg.Points(legendThumbW+legendGap+legendGap)
	l := legendLayout{cols: cols, colW: colW, lineH: lineH}
	for i, e := range g.entries {
		lines := wrapLabel(e.label, textW, st.Width)
		l.lines = append(l.lines, lines)
		if i%cols == 0 {
			l.rowH = append(l.rowH, 0)
		}
		r := len(l.rowH) - 1
		l.rowH[r] = max(l.rowH[r], vg.Length(len(lines))*lineH+vg.Points(3))
	}
	return l
}

// height is the room the legend takes at width; 0 when it is empty.
func (g *gridLegend) height(width vg.Length) vg.Length {
	if len(g.entries) == 0 {
		return 0
	}
	var h vg.Length
	for _, r := range g.layout(width).rowH {
		h += r
	}
	return h + 2*vg.Points(legendPad)
}

// draw draws the legend into c, from its top.
func (g *gridLegend) draw(c draw.Canvas) {
	if len(g.entries) == 0 {
		return
	}
	l := g.layout(c.Size().X)
	st := legendFont()
	for i, e := range g.entries {
		tc := draw.Canvas{Canvas: c.Canvas, Rectangle: l.thumbRect(c, i)}
		for _, th := range e.thumbs {
			th.Thumbnail(&tc)
		}
		tx := tc.Min.X + vg.Points(legendThumbW+legendGap)
		y := tc.Max.Y + vg.Points(1)
		for j, line := range l.lines[i] {
			c.FillText(st, vg.Point{X: tx, Y: y - vg.Length(j)*l.lineH}, line)
		}
	}
}

// thumbRect is where the thumbnail of entry i goes in a legend drawn into
// c: beside the first line of its label.
func (l legendLayout) thumbRect(c draw.Canvas, i int) vg.Rectangle {
	pad := vg.Points(legendPad)
	row, col := i/l.cols, i%l.cols
	y := c.Max.Y - pad
	for r := range row {
		y -= l.rowH[r]
	}
	x := c.Min.X + pad + vg.Length(col)*l.colW
	return vg.Rectangle{
		Min: vg.Point{X: x, Y: y - l.lineH + vg.Points(1)},
		Max: vg.Point{X: x + vg.Points(legendThumbW), Y: y - vg.Points(1)},
	}
}

// wrapLabel splits label into lines no wider than w (as measured by
// width), breaking after a space or one of ",+|" where it can, else
// before a "(", else anywhere.
func wrapLabel(label string, w vg.Length, width func(string) vg.Length) []string {
	if width(label) <= w || w <= 0 {
		return []string{label}
	}
	var lines []string
	rest := label
	for rest != "" && width(rest) > w {
		// The longest prefix that fits, at least one rune.
		fit := 0
		for i := range rest {
			if i == 0 {
				continue
			}
			if width(rest[:i]) > w {
				break
			}
			fit = i
		}
		if fit == 0 {
			_, n := utf8.DecodeRuneInString(rest)
			fit = n
		}
		cut := fit
		if k := strings.LastIndexAny(rest[:fit], " ,+|"); k > 0 {
			cut = k + 1
		} else if k := strings.LastIndex(rest[:fit], "("); k > 0 {
			cut = k
		}
		lines = append(lines, strings.TrimRight(rest[:cut], " "))
		rest = strings.TrimLeft(rest[cut:], " ")
	}
	if rest != "" {
		lines = append(lines, rest)
	}
	return lines
}

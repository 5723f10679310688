package reports

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// StrategyStyle is how every plot of a run draws one strategy: its colour,
// the dash pattern of its lines and the glyph of its markers. A run
// assigns styles by the strategy's index in the Summary (strategyStyleOf),
// so a strategy looks the same in every plot of the run.
type StrategyStyle struct {
	Color  color.RGBA
	Dashes []vg.Length // nil: solid
	Glyph  draw.GlyphDrawer
}

// strategyColors are distinct colours, the first twelve of strong hue and
// mixed lightness (Okabe–Ito's eight, then brown, purple, olive and teal),
// the next twelve lighter or darker variants; neighbours differ in
// lightness too, so they stay apart in grey print, where the dash
// patterns and glyphs also tell them apart. No colour repeats: past 24
// strategies, colours come from an evenly spaced hue wheel.
var strategyColors = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x00, 0x9e, 0x73, 0xff}, // bluish green
	{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	{0x00, 0x00, 0x00, 0xff}, // black
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0x6a, 0x3d, 0x9a, 0xff}, // purple
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x44, 0xaa, 0x99, 0xff}, // teal
	{0xe3, 0x1a, 0x1c, 0xff}, // red
	{0x1f, 0x3a, 0x93, 0xff}, // navy
	{0xfd, 0xbf, 0x6f, 0xff}, // light orange
	{0x11, 0x77, 0x33, 0xff}, // dark green
	{0xf7, 0xb6, 0xd2, 0xff}, // light pink
	{0x7f, 0x7f, 0x7f, 0xff}, // grey
	{0x88, 0x22, 0x55, 0xff}, // wine
	{0xa6, 0xce, 0xe3, 0xff}, // light blue
	{0xb1, 0x59, 0x28, 0xff}, // rust
	{0xca, 0xb2, 0xd6, 0xff}, // lavender
	{0x99, 0x99, 0x33, 0xff}, // dark olive
	{0xb2, 0xdf, 0x8a, 0xff}, // light green
	{0x33, 0x22, 0x88, 0xff}, // indigo
}

// strategyDashes cycle with a period prime to the glyphs', so that the
// pair (dash, glyph) repeats only every 20 strategies.
var strategyDashes = [][]vg.Length{
	nil,
	{vg.Points(7), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)},
}

var strategyGlyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{}, draw.CrossGlyph{},
}

// strategyStyleOf is the style of the i-th strategy of a run.
func strategyStyleOf(i int) StrategyStyle {
	i = max(i, 0)
	var c color.RGBA
	if i < len(strategyColors) {
		c = strategyColors[i]
	} else {
		c = wheelColor(i - len(strategyColors))
	}
	return StrategyStyle{Color: c, Dashes: strategyDashes[i%len(strategyDashes)], Glyph: strategyGlyphs[i%len(strategyGlyphs)]}
}

// wheelColor is the k-th colour of a golden-angle walk around the hue
// circle at two lightness levels: no two k give the same colour.
func wheelColor(k int) color.RGBA {
	h := float64(k) * 137.508
	h -= 360 * float64(int(h/360))
	l := 0.35
	if k%2 == 1 {
		l = 0.6
	}
	return hsl(h, 0.7, l)
}

// hsl converts hue (degrees), saturation and lightness in [0, 1] to RGB.
func hsl(h, s, l float64) color.RGBA {
	c := (1 - abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - abs(hp-2*float64(int(hp/2))-1))
	var r, g, b float64
	switch int(hp) {
	case 0:
		r, g = c, x
	case 1:
		r, g = x, c
	case 2:
		g, b = c, x
	case 3:
		g, b = x, c
	case 4:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	to := func(v float64) uint8 { return uint8(min(255, max(0, (v+m)*255+0.5))) }
	return color.RGBA{to(r), to(g), to(b), 0xff}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// strategyColor is the colour of the i-th strategy of a run.
func strategyColor(i int) color.Color { return strategyStyleOf(i).Color }

// line is the strategy's line style at width w.
func (s StrategyStyle) line(w vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: s.Color, Width: w, Dashes: s.Dashes}
}

// glyph is the strategy's marker of radius r.
func (s StrategyStyle) glyph(r vg.Length) draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.Color, Radius: r, Shape: s.Glyph}
}

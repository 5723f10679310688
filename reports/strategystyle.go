package reports

import (
	"cmp"
	"hash/fnv"
	"image/color"
	"slices"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// StrategyStyle is how every plot draws one strategy: its colour, the dash
// pattern of its lines and the glyph of its markers. The style follows the
// strategy's name, not its place in the run (see strategyStyles), so a
// strategy looks the same in every plot of a run and, as far as the names
// around it allow, across runs and experiments.
type StrategyStyle struct {
	Color  color.RGBA
	Dashes []vg.Length // nil: solid
	Glyph  draw.GlyphDrawer
}

// strategyColors are the palette's slots: distinct colours, the first
// twelve of strong hue and mixed lightness (Okabe–Ito's eight, then brown,
// purple, olive and teal), the next twelve lighter or darker variants;
// neighbours differ in lightness too, so they stay apart in grey print,
// where the dash patterns and glyphs also tell them apart. No colour
// repeats: slots past 24 take colours from an evenly spaced hue wheel.
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

// strategyDashes and strategyGlyphs cycle with coprime periods, so that
// the pair (dash, glyph) repeats only every 30 slots: no two of the
// palette's 24 share both.
var strategyDashes = [][]vg.Length{
	nil,
	{vg.Points(7), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2)},
}

var strategyGlyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{}, draw.CrossGlyph{}, draw.BoxGlyph{},
}

// knownStrategySlots gives the catalogue's most compared base
// strategies, run bare as they usually are, the first slots of the
// palette, its strongest colours; they never collide with one another.
var knownStrategySlots = map[string]int{
	"round-robin": 0, "least-inflight": 1, "p2c": 2, "random": 3,
	"least-request": 4, "peak-ewma": 5, "ewma": 6, "weighted-random": 7,
	"ring-hash": 8, "maglev": 9,
}

// preferredSlot is the slot a strategy's name asks for: its entry in
// knownStrategySlots, else a slot after the known ones picked by the
// FNV-1a hash of the whole name (parameters and wrappers included), so
// that a wrapped strategy never asks for the colour of the bare one it is
// usually compared with.
func preferredSlot(name string) (slot int, known bool) {
	if s, ok := knownStrategySlots[name]; ok {
		return s, true
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	k := len(knownStrategySlots)
	return k + int(h.Sum32()%uint32(len(strategyColors)-k)), false
}

// strategyStyles returns the style of each of names, the strategies of
// one report. The rule, so that a strategy keeps its style across
// experiments:
//
//   - each name asks for a slot of the palette (preferredSlot) by its
//     name alone, never by its place in the list;
//   - the names are served known ones first, then in the order of their
//     slot and then of the name; one whose slot an earlier name took gets
//     the next free slot (wrapping), and past the palette's 24, slots
//     coloured from the hue wheel.
//
// So a style depends only on the set of names: reordering the strategies
// changes nothing, and a name keeps the colour of the slot it asks for
// unless another name of the same report asks for that slot too (or is
// pushed onto it). A repeated name gets one style.
func strategyStyles(names []string) []StrategyStyle {
	type want struct {
		name  string
		slot  int
		known bool
	}
	var wants []want
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		s, k := preferredSlot(n)
		wants = append(wants, want{n, s, k})
	}
	slices.SortFunc(wants, func(a, b want) int {
		if a.known != b.known {
			if a.known {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.name, b.name))
	})
	taken := map[int]bool{}
	slotOf := map[string]int{}
	next := len(strategyColors) // the next slot past the palette
	for _, w := range wants {
		s := -1
		for d := range len(strategyColors) {
			if c := (w.slot + d) % len(strategyColors); !taken[c] {
				s = c
				break
			}
		}
		if s < 0 {
			s = next
			next++
		}
		taken[s] = true
		slotOf[w.name] = s
	}
	out := make([]StrategyStyle, len(names))
	for i, n := range names {
		out[i] = slotStyle(slotOf[n])
	}
	return out
}

// summaryStyles is strategyStyles of the strategies of s, in its order.
func summaryStyles(s *Summary) []StrategyStyle {
	names := make([]string, len(s.Strategies))
	for i := range s.Strategies {
		names[i] = s.Strategies[i].Name
	}
	return strategyStyles(names)
}

// slotStyle is the style of a slot: the palette's colour, then the hue
// wheel's, and the cycling dashes and glyphs.
func slotStyle(i int) StrategyStyle {
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

// line is the strategy's line style at width w.
func (s StrategyStyle) line(w vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: s.Color, Width: w, Dashes: s.Dashes}
}

// glyph is the strategy's marker of radius r.
func (s StrategyStyle) glyph(r vg.Length) draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.Color, Radius: r, Shape: s.Glyph}
}

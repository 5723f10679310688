package reports

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestStrategyStylesDistinct checks the palette: no two of the first 40
// slots share a colour, and no two of the palette's 24 share both dash
// pattern and glyph, so that they stay apart in grey print too.
func TestStrategyStylesDistinct(t *testing.T) {
	seen := map[[3]uint8]int{}
	type pattern struct {
		dashes string
		glyph  string
	}
	patterns := map[pattern]int{}
	for i := range 40 {
		st := slotStyle(i)
		c := [3]uint8{st.Color.R, st.Color.G, st.Color.B}
		if j, dup := seen[c]; dup {
			t.Errorf("slots %d and %d share colour %v", j, i, c)
		}
		seen[c] = i
		if c == [3]uint8{0xff, 0xff, 0xff} {
			t.Errorf("slot %d is white, invisible on the plots' background", i)
		}
		if i < len(strategyColors) {
			p := pattern{dashString(st.Dashes), glyphTypeName(st.Glyph)}
			if j, dup := patterns[p]; dup {
				t.Errorf("slots %d and %d share dashes %q and glyph %s", j, i, p.dashes, p.glyph)
			}
			patterns[p] = i
		}
	}
	slots := map[int]string{}
	for name, s := range knownStrategySlots {
		if other, dup := slots[s]; dup {
			t.Errorf("%s and %s share slot %d", name, other, s)
		}
		slots[s] = name
		if s < 0 || s >= len(strategyColors) {
			t.Errorf("%s: slot %d outside the palette", name, s)
		}
	}
}

// TestStrategyStyleFollowsName checks the rule of strategyStyles: a
// strategy's style comes from its name, whatever its place in the list
// and whichever other strategies share the report, unless one of them
// asks for the same slot; and no two strategies of a report share a
// colour.
func TestStrategyStyleFollowsName(t *testing.T) {
	const ej = "least-inflight+eject(consecutive=5,duration=5s)"
	lists := [][]string{
		{"round-robin", "least-inflight", ej},
		{ej, "p2c", "round-robin"},
		{"nginx:least_conn", ej, "haproxy:leastconn", "random", "least-inflight"},
		{ej},
	}
	want := map[string]color.RGBA{}
	for _, names := range lists {
		styles := strategyStyles(names)
		colours := map[color.RGBA]string{}
		for i, n := range names {
			c := styles[i].Color
			if other, dup := colours[c]; dup {
				t.Errorf("%q: %s and %s share colour %v", names, n, other, c)
			}
			colours[c] = n
			if w, ok := want[n]; ok && w != c {
				t.Errorf("%s is %v in %q, %v in another report", n, c, names, w)
			}
			want[n] = c
		}
	}
	if got := strategyStyles([]string{"p2c"})[0].Color; got != slotStyle(knownStrategySlots["p2c"]).Color {
		t.Errorf("p2c is %v, not its fixed colour", got)
	}

	// Names of one slot: both keep a colour, distinct, whatever their order.
	a, b := "", ""
	for i := 0; b == ""; i++ {
		n := "s" + strconv.Itoa(i)
		if s, _ := preferredSlot(n); s == 15 {
			if a == "" {
				a = n
			} else {
				b = n
			}
		}
	}
	ab, ba := strategyStyles([]string{a, b, "round-robin"}), strategyStyles([]string{"round-robin", b, a})
	if ab[0].Color != ba[2].Color || ab[1].Color != ba[1].Color || ab[0].Color == ab[1].Color {
		t.Errorf("colliding %s and %s: %v %v in one order, %v %v in the other", a, b, ab[0].Color, ab[1].Color, ba[2].Color, ba[1].Color)
	}

	// Past the palette: every one of 40 names still has its own colour.
	var many []string
	for i := range 40 {
		many = append(many, "strategy-"+strconv.Itoa(i))
	}
	seen := map[color.RGBA]bool{}
	for _, st := range strategyStyles(many) {
		if seen[st.Color] {
			t.Errorf("40 strategies: colour %v twice", st.Color)
		}
		seen[st.Color] = true
	}
}

// TestPlotsColourStrategiesByName draws the legend of the percentile and
// share plots for two reports that list the same strategies in other
// orders and with others between them, and checks that each strategy's
// swatch has the same colour in both.
func TestPlotsColourStrategiesByName(t *testing.T) {
	base := sampleSummary()
	pick := func(names ...string) *Summary {
		s := *base
		s.Strategies = nil
		for _, n := range names {
			for _, st := range base.Strategies {
				if strings.HasPrefix(st.Name, n) {
					st.Name = n
					s.Strategies = append(s.Strategies, st)
					break
				}
			}
		}
		return &s
	}
	one := pick("round-robin", "least-inflight")
	other := pick("least-inflight+eject", "least-inflight", "round-robin")
	isName := map[string]bool{"round-robin": true, "least-inflight": true, "least-inflight+eject": true}
	for _, fig := range []struct {
		name string
		of   func(*Summary) *figure
	}{{"percentiles", percentileFigure}, {"share", shareFigure}} {
		colours := map[string]color.RGBA{}
		for _, s := range []*Summary{one, other} {
			f := fig.of(s)
			for _, e := range f.key.entries {
				c, ok := swatchColour(e.thumbs)
				if !ok || !isName[e.label] {
					continue // not a strategy's swatch
				}
				if w, seen := colours[e.label]; seen && w != c {
					t.Errorf("%s: %s is %v in one report, %v in the other", fig.name, e.label, w, c)
				}
				colours[e.label] = c
			}
		}
		if len(colours) != 3 {
			t.Errorf("%s: swatches of %v, want the three strategies", fig.name, colours)
		}
	}
}
func dashString(d []vg.Length) string {
	var b strings.Builder
	for _, l := range d {
		fmt.Fprintf(&b, "%g ", l.Points())
	}
	return b.String()
}

func glyphTypeName(v any) string { return fmt.Sprintf("%T", v) }

// TestLogTicks checks the latency axis' labels: their units, and that
// they thin out as the axis gets shorter or spans more decades, never
// closer than minTickGap.
func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64, length vg.Length) []string {
		var out []string
		for _, tk := range (logTicks{length: length}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		lo, hi float64
		length vg.Length
		want   []string
	}{
		{"5 ms to 40 s, unknown length", 5, 40000, 0,
			[]string{"5 ms", "10 ms", "20 ms", "50 ms", "100 ms", "200 ms", "500 ms", "1 s", "2 s", "5 s", "10 s", "20 s"}},
		{"5 ms to 3 s, tall", 5, 3000, 400,
			[]string{"5 ms", "10 ms", "20 ms", "30 ms", "50 ms", "100 ms", "200 ms", "300 ms", "500 ms", "1 s", "2 s", "3 s"}},
		{"1 ms to 30 s, short", 1, 30000, 190,
			[]string{"1 ms", "3 ms", "10 ms", "30 ms", "100 ms", "300 ms", "1 s", "3 s", "10 s", "30 s"}},
		{"1 ms to 30 s, shorter", 1, 30000, 120, []string{"1 ms", "10 ms", "100 ms", "1 s", "10 s"}},
		{"0.1 ms to 100 s, very short", 0.1, 1e5, 60, []string{"1 ms", "100 ms", "10 s"}},
		{"inside a decade", 8.5, 14, 190, []string{"9 ms", "10 ms", "11 ms", "12 ms", "13 ms", "14 ms"}},
		{"narrow", 10.1, 10.6, 190, []string{"10.1 ms", "10.3 ms", "10.5 ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := labels(tc.lo, tc.hi, tc.length); !slices.Equal(got, tc.want) {
				t.Errorf("%v to %v over %v: %q, want %q", tc.lo, tc.hi, tc.length, got, tc.want)
			}
		})
	}
}

func TestWrapLabel(t *testing.T) {
	width := func(s string) vg.Length { return vg.Length(len(s)) } // one unit a byte
	for _, tc := range []struct {
		label string
		w     vg.Length
		want  []string
	}{
		{"round-robin", 20, []string{"round-robin"}},
		{"haproxy:random(2)+observe(error_limit=10,on_error=mark-down)", 30,
			[]string{"haproxy:random(2)+", "observe(error_limit=10,", "on_error=mark-down)"}},
		{"fair share 1/10 = 10.00%", 12, []string{"fair share", "1/10 =", "10.00%"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
	} {
		got := wrapLabel(tc.label, tc.w, width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("wrapLabel(%q, %v) = %q, want %q", tc.label, tc.w, got, tc.want)
		}
		for _, l := range got {
			if width(l) > tc.w {
				t.Errorf("wrapLabel(%q, %v): line %q is too wide", tc.label, tc.w, l)
			}
		}
	}
}

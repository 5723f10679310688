package reports

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestStrategyStylesDistinct checks the palette against the catalogue's
// size: no two of the first 40 strategies share a colour, and no two of
// the first 20 share both dash pattern and glyph, so that they stay apart
// in grey print too.
func TestStrategyStylesDistinct(t *testing.T) {
	seen := map[[3]uint8]int{}
	type pattern struct {
		dashes string
		glyph  string
	}
	patterns := map[pattern]int{}
	for i := range 40 {
		st := strategyStyleOf(i)
		c := [3]uint8{st.Color.R, st.Color.G, st.Color.B}
		if j, dup := seen[c]; dup {
			t.Errorf("strategies %d and %d share colour %v", j, i, c)
		}
		seen[c] = i
		if c == [3]uint8{0xff, 0xff, 0xff} {
			t.Errorf("strategy %d is white, invisible on the plots' background", i)
		}
		if i < 20 {
			p := pattern{dashString(st.Dashes), glyphTypeName(st.Glyph)}
			if j, dup := patterns[p]; dup {
				t.Errorf("strategies %d and %d share dashes %q and glyph %s", j, i, p.dashes, p.glyph)
			}
			patterns[p] = i
		}
		if a, b := strategyStyleOf(i), st; a.Color != b.Color || !slices.Equal(a.Dashes, b.Dashes) {
			t.Errorf("strategy %d's style is not stable", i)
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

func TestLogTicksInSeconds(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got, want := labels(5, 40000), []string{"5", "10", "20", "50", "100", "200", "500", "1 s", "2 s", "5 s", "10 s", "20 s"}; !slices.Equal(got, want) {
		t.Errorf("5 ms to 40 s: %q, want %q", got, want)
	}
	if got, want := labels(5, 3000), []string{"5", "10", "20", "50", "100", "200", "500", "1000", "2000"}; !slices.Equal(got, want) {
		t.Errorf("5 ms to 3 s: %q, want %q", got, want)
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

package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestPercentileFigureGolden renders the latency-by-percentile chart of the
// seeded sample to SVG and compares it byte for byte with the golden file.
// The SVG is a pure function of the data and gonum's embedded Liberation
// font metrics, with coordinates written to five significant digits, so it
// is stable across runs and machines (a platform that fused a multiply-add
// differently could change a last digit; run with -update and inspect the
// diff if that ever happens).
func TestPercentileFigureGolden(t *testing.T) {
	render := func() []byte {
		f := percentileFigure(sampleSummary())
		if f == nil {
			t.Fatal("no percentile figure for the sample")
		}
		var buf bytes.Buffer
		if _, err := f.svg().WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	got := render()
	if !bytes.Equal(got, render()) {
		t.Fatal("two renderings of the same data differ")
	}
	checkGolden(t, "percentiles.golden.svg", got)
}

func TestPercentileFigureSkips(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points [][]PercentilePoint
		want   bool
	}{
		{"no strategies", nil, false},
		{"no points", [][]PercentilePoint{nil, nil}, false},
		{"only below the median or non-positive", [][]PercentilePoint{{{10, 1}, {90, 0}, {99, -1}}}, false},
		{"one strategy without points", [][]PercentilePoint{nil, {{50, 1}, {99, 2}}}, true},
		{"only the maximum", [][]PercentilePoint{{{100, 7}}}, true},
		{"single point", [][]PercentilePoint{{{99.9, 3}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Summary{SlowThresholdMs: 1000}
			for _, pts := range tc.points {
				s.Strategies = append(s.Strategies, Strategy{Name: "s", Percentiles: pts})
			}
			if got := percentileFigure(s) != nil; got != tc.want {
				t.Errorf("figure drawn: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPercentileFigureSplitGolden renders the chart of a summary with the
// successful and failed requests' curves: two panels, titled so, and the
// failed panel only for strategies with failures.
func TestPercentileFigureSplitGolden(t *testing.T) {
	s := sampleSummary()
	for i := range s.Strategies {
		st := &s.Strategies[i]
		for _, pt := range st.Percentiles {
			st.PercentilesOK = append(st.PercentilesOK, PercentilePoint{Percentile: pt.Percentile, LatencyMs: pt.LatencyMs * 1.1})
			if st.FaultyShare > 0.05 {
				st.PercentilesFailed = append(st.PercentilesFailed, PercentilePoint{Percentile: pt.Percentile, LatencyMs: 1 + pt.Percentile/1000})
			}
		}
	}
	f := percentileFigure(s)
	if f == nil || len(f.panels) != 2 {
		t.Fatalf("figure %v, want two panels", f)
	}
	for i, want := range []string{"successful requests", "failed requests"} {
		if got := f.panels[i].Title.Text; !strings.Contains(got, want) {
			t.Errorf("panel %d title %q, want it to name the %s", i, got, want)
		}
	}
	var buf bytes.Buffer
	if _, err := f.svg().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "percentiles_split.golden.svg", buf.Bytes())
}

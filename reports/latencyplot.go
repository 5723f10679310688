package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// latencyFigure plots per-instance p99 (top) and p50 (bottom) latency over
// time, each panel on a log-scale axis fitted to its own data
// (latencyRange): of the successful requests when the timeline has them
// (P50OkMs, P99OkMs), so that an instance that fails fast does not look
// fast; else (a summary written before the split) of every request, so
// titled. A second in which an instance had requests and none succeeded
// has no latency to draw, neither its timeout's nor a fast failure's
// (latencyAt): its line breaks there, and a cross in the instance's colour
// marks the second at the bottom of the panel. Buckets without requests
// are gaps. It returns nil when there is nothing to draw.
func latencyFigure(s *Summary, st *Strategy) *figure {
	ts := newTimeSeries(s, st)
	if ts == nil {
		return nil
	}
	split := false
	for _, in := range ts.series {
		split = split || len(in.P99OkMs) > 0 || len(in.P50OkMs) > 0
	}
	which, p50, p99 := "every request, failed ones included",
		func(in InstanceSeries) []float64 { return in.P50Ms },
		func(in InstanceSeries) []float64 { return in.P99Ms }
	if split {
		which, p50, p99 = "successful requests",
			func(in InstanceSeries) []float64 { return in.P50OkMs },
			func(in InstanceSeries) []float64 { return in.P99OkMs }
	}
	f := &figure{w: figWidth, h: latencyFigHeight}
	var failedCols []color.Color
	drawn, threshShown := false, false
	for _, q := range []struct {
		name string
		vals func(InstanceSeries) []float64
	}{{"p99", p99}, {"p50", p50}} {
		lo, hi := math.Inf(1), math.Inf(-1)
		var marks []plot.Plotter
		for _, in := range ts.series {
			var xs []float64
			for k := range ts.buckets {
				v, ok, failed := latencyAt(in, q.vals(in), split, k)
				if ok {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
				if failed {
					xs = append(xs, ts.x(k))
				}
			}
			if len(xs) > 0 {
				marks = append(marks, &edgeMarks{xs: xs, row: len(marks) % maxMarkRows, style: failedMark(instanceColor(in.ID))})
				failedCols = appendColor(failedCols, instanceColor(in.ID))
			}
		}
		drawn = drawn || lo <= hi || len(marks) > 0
		ymin, ymax := latencyRange(lo, hi, min(len(marks), maxMarkRows))
		title := fmt.Sprintf("%s: %s latency %s of %s, by instance", st.Name, q.name, ts.bucketPhrase(), which)
		p := ts.newTimePanel(title, latencyAxisLabel(q.name+" latency"))
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		if t := s.SlowThresholdMs; t > ymin && t < ymax {
			p.Add(&hline{y: t, style: threshStyle})
			threshShown = true
		}
		ts.addSeries(p, func(in InstanceSeries, k int) (float64, bool) {
			v, ok, _ := latencyAt(in, q.vals(in), split, k)
			return v, ok
		})
		p.Add(marks...)
		ts.addEjections(p)
		p.Y.Min, p.Y.Max = ymin, ymax
		f.panels = append(f.panels, p)
	}
	if !drawn {
		return nil
	}
	ts.fillLegend(f)
	if len(failedCols) > 0 {
		f.addLegend("every request of the second failed: no latency drawn (instance colour; see the errors plot)",
			&glyphRow{style: failedMark(nil), colors: failedCols})
	}
	if threshShown {
		f.addLegend("slow threshold "+fmtNum(s.SlowThresholdMs)+" ms", &hline{style: threshStyle})
	}
	return f
}

// latencyAt is the latency a panel draws for bucket k of in, whose
// latencies are vals (of the successful requests alone when split). ok
// is false for a bucket without one. failed is true for a bucket with
// requests of which none succeeded: every one failed, or (split) none
// has a successful latency; such a bucket has no latency to draw.
func latencyAt(in InstanceSeries, vals []float64, split bool, k int) (v float64, ok, failed bool) {
	req := at64(in.Requests, k)
	v = at(vals, k)
	has := v > 0 && finite(v)
	if req > 0 && (at64(in.Errors, k) >= req || split && !has) {
		return 0, false, true
	}
	return v, has, false
}

// maxMarkRows is the most rows of failure marks a latency panel stacks.
const maxMarkRows = 3

// failedMark is the cross marking a second in which every request failed.
func failedMark(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
}

// latencyPanelH is about the height of a latency panel's data area.
const latencyPanelH = 190 // points

// minLatencySpan is the least ratio of a latency panel's values' range:
// a flat series is not magnified into noise.
const minLatencySpan = 1.5

// latencyRange is the log-scale y range of a latency panel whose values
// span lo to hi ms (lo > hi: none): the values, widened about their
// geometric middle to at least minLatencySpan, take all the height but a
// tenth below and above, and below at least room for rows of failure
// marks (edgeMarks). Without values, 1 to 10 ms.
func latencyRange(lo, hi float64, rows int) (ymin, ymax float64) {
	if !(lo <= hi) {
		lo, hi = 1, 10
	}
	if r := hi / lo; r < minLatencySpan {
		f := math.Sqrt(minLatencySpan / r)
		lo, hi = lo/f, hi*f
	}
	marks := vg.Points(4) + vg.Length(rows)*edgeMarkRowH(failedMark(nil).Radius)
	bottom := math.Max(0.1, float64(marks/vg.Points(latencyPanelH)))
	const top = 0.1
	total := math.Log10(hi/lo) / (1 - top - bottom)
	return lo / math.Pow(10, bottom*total), hi * math.Pow(10, top*total)
}

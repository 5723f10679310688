package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the flow plot's lines.
var (
	offeredColor  = gray(0x40)
	attemptsColor = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	goodputColor  = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
)

// EventBudget is a retry budget's change of state (strategies.EventBudget):
// Detail "exhausted" at its first refusal, "available" when it next allows
// a retry.
const EventBudget = "budget"

// flowFigure draws, for a strategy with a retry or hedge policy, its
// client requests (offered), every attempt sent at any instance (attempts)
// and the requests answered 2xx within their deadline (goodput), per
// second on one panel: amplification shows as attempts above offered, a
// collapse as goodput falling away from offered. It returns nil for a
// strategy without a policy or without the series.
func flowFigure(s *Summary, st *Strategy) *figure {
	tl := st.Timeline
	if st.Retry == nil || tl == nil || len(tl.Offered) == 0 || len(tl.Attempts) != len(tl.Offered) || len(tl.Goodput) != len(tl.Offered) {
		return nil
	}
	ts := newTimeSeries(s, st)
	if ts == nil {
		return nil
	}
	hi := 0.0
	for k := range tl.Offered {
		hi = math.Max(hi, float64(max(tl.Offered[k], tl.Attempts[k], tl.Goodput[k]))/ts.bucketS)
	}
	if hi == 0 {
		return nil
	}
	f := &figure{w: figWidth, h: figHeight}
	p := ts.newTimePanel(fmt.Sprintf("%s: offered, attempts and goodput (%s buckets)", st.Name, fmtNum(ts.bucketS)+" s"), "per second")
	series := []struct {
		label string
		v     []int64
		style draw.LineStyle
	}{
		{"offered: client requests", tl.Offered, draw.LineStyle{Color: offeredColor, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}},
		{"attempts: sent to instances, retries and hedges included", tl.Attempts, draw.LineStyle{Color: attemptsColor, Width: vg.Points(1.5)}},
		{"goodput: answered 2xx within the deadline", tl.Goodput, draw.LineStyle{Color: goodputColor, Width: vg.Points(1.5)}},
	}
	set := &lineSet{}
	for _, sr := range series {
		v := sr.v
		set.lines = append(set.lines, ts.seriesLines(sr.style, func(k int) (float64, bool) {
			return float64(at64(v, k)) / ts.bucketS, k < len(v)
		})...)
	}
	p.Add(set)
	var exhausted []Event
	for _, e := range st.Events {
		if e.Kind == EventBudget && e.Detail == "exhausted" && finite(e.TimeS) {
			exhausted = append(exhausted, e)
		}
	}
	if len(exhausted) > 0 {
		p.Add(ejectLines(exhausted))
	}
	p.Y.Min, p.Y.Max = belowZero(hi * 1.08)
	p.Y.Tick.Marker = plainTicks{}
	f.panels = append(f.panels, p)
	for _, sr := range series {
		f.addLegend(sr.label, &plotter.Line{LineStyle: sr.style})
	}
	if len(exhausted) > 0 {
		f.addLegend("retry budget exhausted", ejectLines(exhausted))
	}
	if len(ts.windows) > 0 {
		f.addLegend("fault active", &bands{color: faultShade})
	}
	return f
}

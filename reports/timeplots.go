package reports

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// timeSeries is the part of a strategy's timeline the time plots draw.
type timeSeries struct {
	bucketS float64
	buckets int
	series  []InstanceSeries // healthy first, faulty last, each by id
	faulty  map[int]bool
	windows [][2]float64 // distinct fault windows, seconds, but whole-run ones
	// wholeRun describes the faults active for the whole run, which are
	// named once in the legend instead of shading every panel.
	wholeRun []string
	ejects   []Event
	crashes  []Event // crash and proxy-exit events (see incidents.go)
}

// newTimeSeries returns nil when st has no timeline worth drawing.
func newTimeSeries(s *Summary, st *Strategy) *timeSeries {
	tl := st.Timeline
	if tl == nil || len(tl.Instances) == 0 || !(tl.BucketS > 0) || math.IsInf(tl.BucketS, 0) {
		return nil
	}
	ts := &timeSeries{bucketS: tl.BucketS, faulty: faultySet(s, st)}
	for _, in := range tl.Instances {
		ts.buckets = max(ts.buckets, len(in.Requests), len(in.Errors), len(in.P50Ms), len(in.P99Ms))
	}
	if ts.buckets == 0 {
		return nil
	}
	ts.series = slices.Clone(tl.Instances)
	slices.SortStableFunc(ts.series, func(a, b InstanceSeries) int {
		if fa, fb := ts.faulty[a.ID], ts.faulty[b.ID]; fa != fb {
			if fa {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	seen := map[[2]float64]bool{}
	end := float64(ts.buckets) * ts.bucketS
	if s.DurationS > 0 && finite(s.DurationS) {
		end = math.Min(end, s.DurationS)
	}
	for _, f := range s.Faults {
		w := [2]float64{f.StartS, f.EndS}
		if !finite(w[0]) || !finite(w[1]) || w[1] <= w[0] {
			continue
		}
		if w[0] <= 0 && w[1] >= end {
			ts.wholeRun = append(ts.wholeRun, fmt.Sprintf("instance %d: %s for the whole run (not shaded)", f.Instance, f.Mode))
			continue
		}
		if seen[w] {
			continue
		}
		seen[w] = true
		ts.windows = append(ts.windows, w)
	}
	for _, e := range st.Events {
		if takesOut(e) && finite(e.TimeS) {
			ts.ejects = append(ts.ejects, e)
		}
		if isCrash(e) && finite(e.TimeS) {
			ts.crashes = append(ts.crashes, e)
		}
	}
	return ts
}

// faultySet holds the ids the summary or the strategy marks faulty.
func faultySet(s *Summary, st *Strategy) map[int]bool {
	m := map[int]bool{}
	for _, id := range s.FaultyInstances {
		m[id] = true
	}
	for _, in := range st.Instances {
		if in.Faulty {
			m[in.ID] = true
		}
	}
	return m
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// bucketPhrase is "per second" or "per 0.5 s".
func (ts *timeSeries) bucketPhrase() string {
	if ts.bucketS == 1 {
		return "per second"
	}
	return "per " + fmtNum(ts.bucketS) + " s"
}

func (ts *timeSeries) lineStyle(id int) draw.LineStyle {
	w := healthyLine
	if ts.faulty[id] {
		w = faultyLine
	}
	return draw.LineStyle{Color: instanceColor(id), Width: w}
}

func instanceLabel(id int, faulty bool) string {
	if faulty {
		return "instance " + strconv.Itoa(id) + " (faulty)"
	}
	return "instance " + strconv.Itoa(id)
}

// newTimePanel returns a panel with the x axis set to the timeline's span
// and fault windows shaded.
func (ts *timeSeries) newTimePanel(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "time since start of the attack (s)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, float64(ts.buckets)*ts.bucketS
	p.X.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	if len(ts.windows) > 0 {
		p.Add(&bands{spans: ts.windows, color: faultShade})
	}
	return p
}

// seriesLines is y(k) for the buckets where ok, as lines broken at the
// buckets where !ok, in style sty.
func (ts *timeSeries) seriesLines(sty draw.LineStyle, y func(k int) (float64, bool)) []seriesLine {
	var out []seriesLine
	var seg plotter.XYs
	flush := func() {
		if len(seg) > 0 {
			out = append(out, seriesLine{xys: seg, style: sty})
		}
		seg = nil
	}
	for k := range ts.buckets {
		v, ok := y(k)
		if !ok || !finite(v) {
			flush()
			continue
		}
		seg = append(seg, plotter.XY{X: ts.x(k), Y: v})
	}
	flush()
	return out
}

// x is the middle of bucket k, in seconds.
func (ts *timeSeries) x(k int) float64 { return (float64(k) + 0.5) * ts.bucketS }

// addSeries draws y(k) of every instance (see seriesLines) as one
// lineSet, so that coinciding lines stay visible: the faulty instances'
// thick lines first, the healthy ones' thin lines over them.
func (ts *timeSeries) addSeries(p *plot.Plot, y func(in InstanceSeries, k int) (float64, bool)) {
	set := &lineSet{}
	for _, in := range ts.drawOrder() {
		set.lines = append(set.lines, ts.seriesLines(ts.lineStyle(in.ID), func(k int) (float64, bool) { return y(in, k) })...)
	}
	p.Add(set)
}

// drawOrder is the series, faulty ones first.
func (ts *timeSeries) drawOrder() []InstanceSeries {
	out := make([]InstanceSeries, 0, len(ts.series))
	for _, faulty := range []bool{true, false} {
		for _, in := range ts.series {
			if ts.faulty[in.ID] == faulty {
				out = append(out, in)
			}
		}
	}
	return out
}

// addEjections marks ejections as dotted vertical lines in the ejected
// instance's colour, and crashes as solid ones (crashLines).
func (ts *timeSeries) addEjections(p *plot.Plot) {
	if len(ts.ejects) > 0 {
		p.Add(ejectLines(ts.ejects))
	}
	if len(ts.crashes) > 0 {
		p.Add(crashLines(ts.crashes))
	}
}

// fillLegend lists the instances (collapsing healthy ones when there are
// many), then the fault shading and the ejection marks.
func (ts *timeSeries) fillLegend(f *figure) {
	healthy := 0
	for _, in := range ts.series {
		if !ts.faulty[in.ID] {
			healthy++
		}
	}
	collapse := len(ts.series) > maxLegendEntries
	var some lineStack // a few of the collapsed lines
	for _, in := range ts.series {
		if collapse && !ts.faulty[in.ID] {
			if len(some) < maxThumbColors {
				some = append(some, ts.lineStyle(in.ID))
			}
			continue
		}
		f.addLegend(instanceLabel(in.ID, ts.faulty[in.ID]), &plotter.Line{LineStyle: ts.lineStyle(in.ID)})
	}
	if collapse && healthy > 0 {
		f.addLegend(fmt.Sprintf("%d healthy instances (each its own colour)", healthy), some)
	}
	if len(ts.windows) > 0 {
		f.addLegend("fault active", &bands{color: faultShade})
	}
	for _, w := range ts.wholeRun {
		f.addLegend(w)
	}
	if len(ts.ejects) > 0 {
		f.addLegend("ejection (instance colour)", ejectLines(ts.ejects))
	}
	if len(ts.crashes) > 0 {
		f.addLegend(crashLegend(ts.crashes), crashLines(ts.crashes))
	}
}

// errorFigure plots, per instance, the failed requests per second (top:
// where the failures went, so an instance that swallows the traffic and
// fails it stands out) and errors/requests per bucket in percent (bottom:
// how bad each instance was while it got traffic). Buckets without
// requests are gaps in the ratio. It returns nil when no bucket has
// requests.
func errorFigure(s *Summary, st *Strategy) *figure {
	ts := newTimeSeries(s, st)
	if ts == nil {
		return nil
	}
	hi, hiRate, some := 0.0, 0.0, false
	ratio := func(in InstanceSeries, k int) (float64, bool) {
		req := at64(in.Requests, k)
		if req <= 0 {
			return 0, false
		}
		return 100 * math.Min(1, math.Max(0, float64(at64(in.Errors, k))/float64(req))), true
	}
	for _, in := range ts.series {
		for k := range ts.buckets {
			if v, ok := ratio(in, k); ok {
				hi, some = math.Max(hi, v), true
			}
			hiRate = math.Max(hiRate, float64(at64(in.Errors, k))/ts.bucketS)
		}
	}
	if !some {
		return nil
	}
	f := &figure{w: figWidth, h: latencyFigHeight}
	p := ts.newTimePanel(fmt.Sprintf("%s: failed requests per second, by instance", st.Name), "failed requests (req/s)")
	ts.addSeries(p, func(in InstanceSeries, k int) (float64, bool) {
		return float64(at64(in.Errors, k)) / ts.bucketS, k < ts.buckets
	})
	ts.addEjections(p)
	p.Y.Min, p.Y.Max = belowZero(math.Max(1, hiRate*1.08))
	p.Y.Tick.Marker = plainTicks{}
	f.panels = append(f.panels, p)

	p = ts.newTimePanel(fmt.Sprintf("%s: error rate %s (errors / requests of the instance), by instance", st.Name, ts.bucketPhrase()), "errors / requests (%)")
	ts.addSeries(p, ratio)
	ts.addEjections(p)
	p.Y.Min, p.Y.Max = belowZero(math.Max(1, hi*1.08))
	f.panels = append(f.panels, p)
	ts.fillLegend(f)
	return f
}

// belowZero is the range of a linear axis from 0 to hi with a margin
// below 0, so that the lines of instances at 0 (no errors), spread apart
// by lineSet, are not cut by the axis.
func belowZero(hi float64) (float64, float64) { return -0.03 * hi, hi }

func at(vs []float64, k int) float64 {
	if k < len(vs) {
		return vs[k]
	}
	return 0
}

func at64(vs []int64, k int) int64 {
	if k < len(vs) {
		return vs[k]
	}
	return 0
}

// rateFigure plots per-instance requests per second over time, with the
// even split of the target rate as a dashed line. Buckets count requests by
// the time they were sent. It returns nil when no bucket has requests.
func rateFigure(s *Summary, st *Strategy) *figure {
	ts := newTimeSeries(s, st)
	if ts == nil {
		return nil
	}
	hi, some := 0.0, false
	for _, in := range ts.series {
		for _, r := range in.Requests {
			if r > 0 {
				hi, some = math.Max(hi, float64(r)/ts.bucketS), true
			}
		}
	}
	if !some {
		return nil
	}
	f := &figure{w: figWidth, h: figHeight}
	title := fmt.Sprintf("%s: requests per second by instance (%s buckets)", st.Name, fmtNum(ts.bucketS)+" s")
	p := ts.newTimePanel(title, "requests sent (req/s)")
	fairSty := draw.LineStyle{Color: gray(0), Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}
	n := instanceCount(s)
	fair := 0.0
	if n > 0 && s.TargetRate > 0 && finite(s.TargetRate) {
		fair = s.TargetRate / float64(n)
		p.Add(&hline{y: fair, style: fairSty})
	}
	ts.addSeries(p, func(in InstanceSeries, k int) (float64, bool) {
		return float64(at64(in.Requests, k)) / ts.bucketS, k < len(in.Requests)
	})
	ts.addEjections(p)
	p.Y.Min, p.Y.Max = belowZero(math.Max(hi, fair) * 1.08)
	p.Y.Tick.Marker = plainTicks{}
	f.panels = append(f.panels, p)
	ts.fillLegend(f)
	if fair > 0 {
		f.addLegend("even split "+fmtNum(fair)+" req/s", &hline{style: fairSty})
	}
	return f
}

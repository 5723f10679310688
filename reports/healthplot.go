package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// laneSpan is a bar from x0 to x1 seconds in the lane at y, covering the
// fraction height of the lane.
type laneSpan struct {
	y, x0, x1 float64
	height    float64
	color     color.Color
}

// laneSpans draws bars in data coordinates, clipped to the data area. It
// has no data range: the figure sets its axes. Its legend thumbnail is a
// bar striped with the thumb colours.
type laneSpans struct {
	spans []laneSpan
	thumb []color.Color
}

// Plot implements plot.Plotter.
func (l *laneSpans) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	clampX := func(v vg.Length) vg.Length { return max(c.Min.X, min(c.Max.X, v)) }
	clampY := func(v vg.Length) vg.Length { return max(c.Min.Y, min(c.Max.Y, v)) }
	for _, s := range l.spans {
		x0, x1 := clampX(trX(s.x0)), clampX(trX(s.x1))
		ya, yb := clampY(trY(s.y-s.height/2)), clampY(trY(s.y+s.height/2))
		y0, y1 := min(ya, yb), max(ya, yb)
		if x1 <= x0 || y1 <= y0 {
			continue
		}
		c.FillPolygon(s.color, rect(x0, y0, x1, y1))
	}
}

// Thumbnail implements plot.Thumbnailer.
func (l *laneSpans) Thumbnail(c *draw.Canvas) {
	h := (c.Max.Y - c.Min.Y) / 4
	w := (c.Max.X - c.Min.X) / vg.Length(max(1, len(l.thumb)))
	for i, col := range l.thumb {
		x := c.Min.X + vg.Length(i)*w
		c.FillPolygon(col, rect(x, c.Min.Y+h, x+w, c.Max.Y-h))
	}
}

// byTime returns a copy of events in time order, ties in their order.
func byTime(events []Event) []Event {
	evs := slices.Clone(events)
	slices.SortStableFunc(evs, func(a, b Event) int { return cmp.Compare(a.TimeS, b.TimeS) })
	return evs
}

// takesOut reports whether e takes its instance out of traffic (an
// ejection, the "unhealthy" health level, a failed active check), and
// putsBack whether it gives it traffic again.
func takesOut(e Event) bool {
	return e.Kind == "eject" || e.Kind == "health" && e.Detail == "unhealthy" || e.Kind == "probe" && e.Detail == "down"
}

func putsBack(e Event) bool {
	return e.Kind == "readmit" || e.Kind == "health" && e.Detail != "unhealthy" || e.Kind == "probe" && e.Detail == "up"
}

// ejectionSpans pairs each event that takes an instance out of traffic
// (see takesOut) with the next that puts it back; an instance still out at
// the end spans to end. A repeated ejection while out and a re-admission
// while in are ignored.
func ejectionSpans(events []Event, end float64) map[int][][2]float64 {
	evs := byTime(events)
	open := map[int]float64{}
	out := map[int][][2]float64{}
	for _, e := range evs {
		if !finite(e.TimeS) {
			continue
		}
		start, ejected := open[e.Instance]
		switch {
		case takesOut(e):
			if !ejected {
				open[e.Instance] = e.TimeS
			}
		case putsBack(e):
			if ejected {
				out[e.Instance] = append(out[e.Instance], [2]float64{start, e.TimeS})
				delete(open, e.Instance)
			}
		}
	}
	for id, start := range open {
		out[id] = append(out[id], [2]float64{start, math.Max(start, end)})
	}
	return out
}

// levelSpan is a time an instance spent at a reduced health level.
type levelSpan struct {
	x0, x1 float64
	level  string // "degraded" or "critical"
}

// healthLevelSpans pairs each "health" event to degraded or critical with
// the instance's next health event (or end).
func healthLevelSpans(events []Event, end float64) map[int][]levelSpan {
	evs := byTime(events)
	open := map[int]levelSpan{}
	out := map[int][]levelSpan{}
	for _, e := range evs {
		if e.Kind != "health" || !finite(e.TimeS) {
			continue
		}
		if sp, ok := open[e.Instance]; ok {
			sp.x1 = e.TimeS
			out[e.Instance] = append(out[e.Instance], sp)
			delete(open, e.Instance)
		}
		if e.Detail == "degraded" || e.Detail == "critical" {
			open[e.Instance] = levelSpan{x0: e.TimeS, level: e.Detail}
		}
	}
	for id, sp := range open {
		sp.x1 = math.Max(sp.x0, end)
		out[id] = append(out[id], sp)
	}
	return out
}

// Colours of the reduced health levels on the health plot.
var (
	degradedColor = color.RGBA{R: 0xf2, G: 0xc1, B: 0x4e, A: 0xff}
	criticalColor = color.RGBA{R: 0xe0, G: 0x6c, B: 0x2c, A: 0xff}
)

// attackEnd is how long st's attack ran, in seconds: its elapsed time, else
// its timeline's span, else the configured duration.
func attackEnd(s *Summary, st *Strategy) float64 {
	if st.ElapsedS > 0 && finite(st.ElapsedS) {
		return st.ElapsedS
	}
	if tl := st.Timeline; tl != nil && tl.BucketS > 0 && finite(tl.BucketS) {
		n := 0
		for _, in := range tl.Instances {
			n = max(n, len(in.Requests))
		}
		if n > 0 {
			return float64(n) * tl.BucketS
		}
	}
	if s.DurationS > 0 && finite(s.DurationS) {
		return s.DurationS
	}
	return 0
}

// healthFigure draws one lane per instance with a bar over each span the
// strategy had it ejected (a black mark at each ejection, so back-to-back
// ejections stay apart), and each instance's fault windows shaded in its
// lane (a fault of an instance without a lane shades every lane). It
// returns nil when the strategy ejected nothing.
func healthFigure(s *Summary, st *Strategy) *figure {
	hasEject := slices.ContainsFunc(st.Events, func(e Event) bool {
		return (takesOut(e) || e.Kind == "health" && (e.Detail == "degraded" || e.Detail == "critical")) && finite(e.TimeS)
	})
	if !hasEject {
		return nil
	}
	end := attackEnd(s, st)
	if end <= 0 {
		for _, e := range st.Events {
			if finite(e.TimeS) {
				end = math.Max(end, e.TimeS)
			}
		}
	}
	spans := ejectionSpans(st.Events, end)
	levels := healthLevelSpans(st.Events, end)

	idSet := map[int]bool{}
	for _, in := range st.Instances {
		idSet[in.ID] = true
	}
	if st.Timeline != nil {
		for _, in := range st.Timeline.Instances {
			idSet[in.ID] = true
		}
	}
	for _, e := range st.Events {
		idSet[e.Instance] = true
	}
	ids := make([]int, 0, len(idSet))
	for id := range idSet {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	lane := map[int]float64{}
	for i, id := range ids {
		lane[id] = float64(i)
	}
	faulty := faultySet(s, st)

	h := max(3.2*vg.Inch, vg.Length(len(ids))*0.26*vg.Inch+1.6*vg.Inch)
	f := &figure{w: figWidth, h: min(h, 14*vg.Inch)}
	p := plot.New()
	p.Title.Text = st.Name + ": ejections by instance"
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "time since start of the attack (s)"
	p.Y.Label.Text = "instance"
	p.X.Min, p.X.Max = 0, math.Max(end, 1e-9)
	p.X.Tick.Marker = plainTicks{}
	p.Y.Min, p.Y.Max = -0.5, float64(len(ids))-0.5
	p.Y.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}

	var ticks []plot.Tick
	every := max(1, (len(ids)+29)/30)
	for i, id := range ids {
		t := plot.Tick{Value: float64(i)}
		if i%every == 0 || faulty[id] || len(spans[id]) > 0 || len(levels[id]) > 0 {
			t.Label = strconv.Itoa(id)
			if faulty[id] {
				t.Label += " (faulty)"
			}
		}
		ticks = append(ticks, t)
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)

	var sep []laneSpan
	for i := range ids {
		if i%2 == 1 {
			sep = append(sep, laneSpan{y: float64(i), x0: p.X.Min, x1: p.X.Max, height: 1, color: gray(0xf4)})
		}
	}
	p.Add(&laneSpans{spans: sep})

	var shade []laneSpan
	for _, fw := range s.Faults {
		if !finite(fw.StartS) || !finite(fw.EndS) || fw.EndS <= fw.StartS {
			continue
		}
		if y, ok := lane[fw.Instance]; ok {
			shade = append(shade, laneSpan{y: y, x0: fw.StartS, x1: fw.EndS, height: 1, color: faultShade})
			continue
		}
		for i := range ids {
			shade = append(shade, laneSpan{y: float64(i), x0: fw.StartS, x1: fw.EndS, height: 1, color: faultShade})
		}
	}
	if len(shade) > 0 {
		p.Add(&laneSpans{spans: shade})
	}

	var lvl []laneSpan
	seen := map[string]bool{}
	for _, id := range ids {
		for _, sp := range levels[id] {
			c := degradedColor
			if sp.level == "critical" {
				c = criticalColor
			}
			seen[sp.level] = true
			lvl = append(lvl, laneSpan{y: lane[id], x0: sp.x0, x1: math.Max(sp.x1, sp.x0+end/400), height: 0.35, color: c})
		}
	}
	if len(lvl) > 0 {
		p.Add(&laneSpans{spans: lvl})
	}

	var bars []laneSpan
	var barCols []color.Color // of the instances with bars, for the legend
	total := 0
	for _, id := range ids {
		for _, sp := range spans[id] {
			x1 := sp[1]
			if x1-sp[0] < end/400 {
				x1 = sp[0] + end/400 // keep an instant ejection visible
			}
			bars = append(bars, laneSpan{y: lane[id], x0: sp[0], x1: x1, height: 0.6, color: instanceColor(id)})
			barCols = appendColor(barCols, instanceColor(id))
			total++
		}
	}
	p.Add(&laneSpans{spans: bars})
	var starts []laneSpan
	for _, b := range bars {
		w := end / 600
		starts = append(starts, laneSpan{y: b.y, x0: b.x0, x1: b.x0 + w, height: 0.8, color: gray(0)})
	}
	p.Add(&laneSpans{spans: starts})

	f.panels = []*plot.Plot{p}
	f.addLegend(fmt.Sprintf("ejected (%d %s, instance colour)", total, plural(total, "span", "spans")), &laneSpans{thumb: barCols})
	if seen["degraded"] {
		f.addLegend("degraded (health level)", &laneSpans{thumb: []color.Color{degradedColor}})
	}
	if seen["critical"] {
		f.addLegend("critical (health level)", &laneSpans{thumb: []color.Color{criticalColor}})
	}
	if len(shade) > 0 {
		f.addLegend("fault active", &bands{color: faultShade})
	}
	return f
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package reports

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// incidentView is one crash, panic or proxy exit of a strategy (see
// Event), as the report shows it: a sentence and the log lines that came
// with it.
type incidentView struct {
	Text string   // "instance 3 crashed at 4.2 s: exited with code 137"
	Log  []string // the end of its output, oldest line first
}

// incidentViews returns st's crash, panic and proxy-exit events, in time
// order.
func incidentViews(st *Strategy) []incidentView {
	var out []incidentView
	for _, e := range byTime(st.Events) {
		var what string
		switch e.Kind {
		case EventCrash:
			what = fmt.Sprintf("instance %d crashed", e.Instance)
		case EventPanic:
			what = fmt.Sprintf("instance %d panicked", e.Instance)
		case EventProxyExit:
			what = "the proxy exited"
		default:
			continue
		}
		out = append(out, incidentView{Text: fmt.Sprintf("%s at %.2f s: %s", what, e.TimeS, e.Detail), Log: e.Log})
	}
	return out
}

// incidents writes a strategy's incidents: each a bold line, its log in a
// code block.
func (m mdWriter) incidents(incs []incidentView) {
	for _, in := range incs {
		m.p("- **%s**\n", mdText(in.Text))
		if len(in.Log) > 0 {
			m.p("\n  ```\n")
			for _, l := range in.Log {
				m.p("  %s\n", strings.ReplaceAll(l, "```", "'''"))
			}
			m.p("  ```\n")
		}
	}
	if len(incs) > 0 {
		m.p("\n")
	}
}

// isCrash reports whether e is an instance's crash or the proxy's exit:
// what the time plots mark.
func isCrash(e Event) bool { return e.Kind == EventCrash || e.Kind == EventProxyExit }

// crashLegend names the marks of events.
func crashLegend(events []Event) string {
	var crash, exit bool
	for _, e := range events {
		crash = crash || e.Kind == EventCrash
		exit = exit || e.Kind == EventProxyExit
	}
	switch {
	case crash && exit:
		return "crash, proxy exit"
	case exit:
		return "proxy exit"
	}
	return "crash"
}

// crashLines marks crashes as thick solid vertical lines in the crashed
// instance's colour, a proxy's exit in black.
type crashLines struct {
	events []Event
}

// Plot implements plot.Plotter.
func (v *crashLines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, e := range v.events {
		x := trX(e.TimeS)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		col := gray(0)
		if e.Instance >= 0 {
			col = instanceColor(e.Instance)
		}
		c.StrokeLine2(draw.LineStyle{Color: col, Width: vg.Points(2.5)}, x, c.Min.Y, x, c.Max.Y)
	}
}

// Thumbnail implements plot.Thumbnailer.
func (v *crashLines) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(draw.LineStyle{Color: gray(0), Width: vg.Points(2.5)}, x, c.Min.Y, x, c.Max.Y)
}

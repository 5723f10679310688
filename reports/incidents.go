package reports

import (
	"fmt"
	"strings"
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

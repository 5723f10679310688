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
			what = fmt.Sprintf("a handler of instance %d panicked", e.Instance)
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

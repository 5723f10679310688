package harness

import (
	"fmt"

	"github.com/lbchaos/lbchaos/reports"
)

// incidentNotes are the run-level notes on strategy name's crash, panic
// and proxy-exit events: each crash and proxy exit, and per instance its
// panics it survived, with the first one's time and detail.
func incidentNotes(name string, events []reports.Event) []string {
	var notes []string
	panics := map[int]int{}
	var order []int
	first := map[int]reports.Event{}
	for _, e := range events {
		switch e.Kind {
		case reports.EventCrash:
			notes = append(notes, fmt.Sprintf("%s: instance %d crashed at %.1f s: %s. The run went on; requests sent to it from then on failed.",
				name, e.Instance, e.TimeS, e.Detail))
		case reports.EventProxyExit:
			notes = append(notes, fmt.Sprintf("%s: the proxy under test exited at %.1f s: %s.", name, e.TimeS, e.Detail))
		case reports.EventPanic:
			if panics[e.Instance] == 0 {
				order = append(order, e.Instance)
				first[e.Instance] = e
			}
			panics[e.Instance]++
		}
	}
	for _, id := range order {
		e := first[id]
		times := ""
		if n := panics[id]; n > 1 {
			times = fmt.Sprintf(" (%d panic events in all)", n)
		}
		notes = append(notes, fmt.Sprintf("%s: instance %d panicked at %.1f s%s and went on serving: %s.", name, id, e.TimeS, times, e.Detail))
	}
	return notes
}

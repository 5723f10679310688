package sim

import (
	"fmt"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// simAbort judges the experiment's abort conditions in virtual time by
// the rule the real engine follows (engine.AbortWatch): every outcome is
// counted at its end, and each condition is judged at the end of each
// slice of its window once a whole window has passed. When one trips,
// nothing more arrives, the requests whose client waits are left out as
// aborted (as the real engine cancels them), and every fault is healed.
type simAbort struct {
	watch   *engine.AbortWatch // nil: no abort conditions
	next    time.Duration      // the next judgement; never when none is due
	tripped *reports.Abort
}

func newSimAbort(exp *experiments.Experiment, name string) simAbort {
	a := simAbort{watch: engine.NewAbortWatch(exp, name), next: never}
	if a.watch != nil {
		a.next = a.due(exp.Duration)
	}
	return a
}

// due is the watch's next judgement, or never from the attack's end on:
// both engines judge only before the end (a window must be shorter than
// the run), so they agree at the boundary.
func (a *simAbort) due(duration time.Duration) time.Duration {
	if d := a.watch.Due(); d < duration {
		return d
	}
	return never
}

// judge judges the conditions at t; when one trips it stops the attack.
func (s *sim) judge(t time.Duration) {
	a := &s.abort
	a.tripped = a.watch.Judge(t)
	a.next = a.due(s.duration)
	if a.tripped == nil {
		return
	}
	a.next = never
	s.arrival = never
	s.nextOp = len(s.ops)
	for i := range s.insts {
		s.insts[i].fault, s.insts[i].from = nil, 0
	}
}

// abortNotes are the notes of a strategy an abort stopped.
func abortNotes(name string, a *reports.Abort) []string {
	return []string{fmt.Sprintf("%s: aborted at %.1f s: %s over %gs was %.3g; the load stopped, the requests in flight were cancelled and every fault was healed.",
		name, a.AtS, a.Condition(), a.WindowS, a.Value)}
}

// abortWaiting drops the requests whose client still waits, as an
// interrupted run cancels them, and counts them as aborted by the
// generators that sent them.
func (s *sim) abortWaiting() {
	if s.pol != nil {
		s.abortPolicy()
		return
	}
	for i := s.head; i >= 0; i = s.reqs[i].next {
		s.reqs[i].ticket = strategies.Ticket{}
		s.gens[s.reqs[i].src].coll.Abort()
	}
	s.head, s.tail, s.waiting = -1, -1, 0
}

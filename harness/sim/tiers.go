package sim

import (
	"context"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
)

// simTiers is a tiered experiment's downstream calls, simulated as the
// real engine makes them (harness/live/tiers.go, faultyserver.Downstream):
// an attempt served by an instance of a tier with a downstream does its
// own work on a worker, releases it, then makes its tier's calls one
// after another, each a request of the policy loop (policySim) through
// the instance's own balancer, with the experiment's timeout as its
// deadline; it is answered 200 when every call succeeded, else 502, as
// soon as one fails. A call's attempts are recorded at their instances
// (Collector.AddTierAttempt). When the attempt's client gives it up, its
// call is cancelled (its attempts in flight end as cancelled), unless
// instances keep abandoned work (keep_abandoned): the call then goes on,
// and its end answers nobody.
type simTiers struct {
	callerOf []int32 // by instance: the balancer it calls through; -1: none
	callsOf  []int32 // by instance: its calls per request
	childOf  []int32 // by attempt slot: the call it waits on; -1: none
	lbs      [][]*strategies.Balancer
}

// newTiers adds a balancer per instance of a tier that calls the next,
// built as the real engine builds it (engine.TierBalancer).
func (p *policySim) newTiers(exp *experiments.Experiment, name string, clock strategies.Clock) error {
	t := &simTiers{callerOf: make([]int32, exp.Instances.Count), callsOf: make([]int32, exp.Instances.Count),
		lbs: make([][]*strategies.Balancer, len(exp.Tiers))}
	for i := range t.callerOf {
		t.callerOf[i] = -1
	}
	for ti, tier := range exp.Tiers {
		if tier.Calls == 0 {
			continue
		}
		for id := tier.First; id < tier.First+tier.Count; id++ {
			lb, err := engine.TierBalancer(exp, name, ti, id, clock)
			if err != nil {
				return err
			}
			lb.SetSerial()
			t.callerOf[id], t.callsOf[id] = int32(len(p.lbs)), int32(tier.Calls)
			t.lbs[ti] = append(t.lbs[ti], lb)
			p.add(lb, exp.Tiers[ti+1].First)
		}
	}
	p.tiers = t
	return nil
}

// calls starts the downstream calls of attempt i, whose service at its
// instance just ended, and reports true; false when its instance calls
// nobody (or the experiment has no tiers).
func (t *simTiers) calls(s *sim, i int32) bool {
	if t == nil || t.callerOf[s.reqs[i].inst] < 0 {
		return false
	}
	s.reqs[i].state &^= stWorking
	s.startCall(i, t.callsOf[s.reqs[i].inst])
	return true
}

// startCall starts a call of attempt i's instance with calls calls to make.
func (s *sim) startCall(i, calls int32) {
	p, t := s.pol, s.pol.tiers
	r := &s.reqs[i]
	lb, src, gen := t.callerOf[r.inst], r.src, r.gen
	gi := p.allocReq()
	g := &p.reqs[gi]
	g.at, g.deadline, g.src, g.lb = s.clock.now, s.clock.now+s.timeout, src, lb
	g.parent, g.pgen, g.callsLeft = i, gen, calls
	for int(i) >= len(t.childOf) {
		t.childOf = append(t.childOf, -1)
	}
	t.childOf[i] = gi
	s.startRequest(gi)
}

// callEnded moves on the attempt whose call gi ended now: its next call,
// or its answer.
func (s *sim) callEnded(gi int32, ok bool) {
	p, t := s.pol, s.pol.tiers
	g := &p.reqs[gi]
	parent, pgen, left := g.parent, g.pgen, g.callsLeft
	p.freeReq(gi)
	r := &s.reqs[parent]
	if r.gen != pgen || t.childOf[parent] != gi {
		return // its attempt is gone
	}
	t.childOf[parent] = -1
	if ok && left > 1 {
		s.startCall(parent, left-1)
		return
	}
	status := 200
	if !ok {
		status = 502
	}
	switch {
	case r.state&stWaiting == 0:
		s.freeSlot(parent) // kept after its client left: it answers nobody
	case s.cal != nil:
		s.sendBack(parent, kindServe, status)
	default:
		s.attemptAnswered(parent, status, nil)
	}
}

// abandonCalling handles attempt i, given up by its client, when it waits
// on a call, and reports whether it did: the call is cancelled and the
// attempt freed, or, with keep_abandoned, left to go on.
func (t *simTiers) abandonCalling(s *sim, i int32) bool {
	if int(i) >= len(t.childOf) || t.childOf[i] < 0 {
		return false
	}
	if s.keep {
		return true // freed when its call ends
	}
	gi := t.childOf[i]
	t.childOf[i] = -1
	s.cancelCall(gi)
	s.freeSlot(i)
	return true
}

// cancelCall ends call gi, whose caller gave it up: its attempts in flight
// are cancelled, and it answers nobody.
func (s *sim) cancelCall(gi int32) {
	p := s.pol
	g := &p.reqs[gi]
	for len(g.inflight) > 0 {
		j := g.inflight[0]
		b := s.attemptOf(j)
		g.inflight = g.inflight[1:]
		s.abandon(j)
		s.finishAttempt(gi, b, 0, context.Canceled, false, true)
		g = &p.reqs[gi]
	}
	if g.retryPending {
		g.retryPending = false
		p.pols[g.lb].RetryEnded()
	}
	p.freeReq(gi)
}

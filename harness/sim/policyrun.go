package sim

import (
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// Kinds of a policy's timers (see policySim).
const (
	timerDeadline = iota // a request's deadline
	timerPerTry          // an attempt's per-try timeout
	timerHedge           // a request's next hedge
	timerRetry           // a request's retry, after its backoff
)

// timer sets a timer of kind at t for id (a request, or an attempt's
// slot for timerPerTry) of generation gen.
func (p *policySim) timer(t time.Duration, kind int, id int32, gen uint32) {
	p.timers.push(simEvent{at: t, seq: p.seq, slot: id<<2 | int32(kind), gen: gen})
	p.seq++
}

// runPolicy is run for a strategy with a client policy: the same loop,
// with the policy's timers in place of the waiting list's timeouts.
func (s *sim) runPolicy(done <-chan struct{}) (interrupted bool) {
	p := s.pol
	for step := 1; ; step++ {
		if step%checkEvery == 0 {
			select {
			case <-done:
				return true
			default:
			}
		}
		tEvent := s.events.next()
		tTimer := p.timers.next()
		tControl := s.nextControl
		if s.arrival == never && p.live == 0 {
			return false
		}
		switch t := min(s.arrival, tEvent, tTimer, tControl); t {
		case tControl:
			s.clock.now = t
			s.control(t)
			s.nextControl = s.controlDue()
			if s.abort.tripped != nil {
				return true
			}
		case tEvent:
			s.clock.now = t
			s.answerAttempt(s.events.pop())
		case tTimer:
			s.clock.now = t
			s.fire(p.timers.pop())
		default:
			s.clock.now = t
			s.arrivePolicy(t)
		}
	}
}

// fire handles a policy's timer, unless it is stale.
func (s *sim) fire(e simEvent) {
	p := s.pol
	id, kind := e.slot>>2, int(e.slot&3)
	if kind == timerPerTry {
		if r := &s.reqs[id]; r.gen == e.gen && r.state&stWaiting != 0 {
			s.attemptTimedOut(id)
		}
		return
	}
	g := &p.reqs[id]
	if g.gen != e.gen {
		return // the request has ended
	}
	switch kind {
	case timerDeadline:
		s.expirePolicy(id)
	case timerRetry:
		if !g.retryPending {
			return
		}
		g.retryPending = false
		if !s.sendAttempt(id, attemptRetry) {
			// No host for the retry: the request keeps its failure.
			g = &p.reqs[id]
			p.pols[g.lb].RetryEnded()
			s.endRequest(id, g.lastFailInst, int(g.lastStatus), g.lastErr, g.lastTimeout)
		}
	case timerHedge:
		if len(g.inflight) == 0 || int(g.sent) >= p.pols[g.lb].MaxHedged() || !s.sendAttempt(id, attemptHedge) {
			return // no more hedging for this request
		}
		if g = &p.reqs[id]; g.gen == e.gen && int(g.sent) < p.pols[g.lb].MaxHedged() {
			p.timer(s.clock.now+g.hedgeDelay, timerHedge, id, e.gen)
		}
	}
}

// answerAttempt handles an attempt's event: a service end or a fail
// answer, or, calibrated, its arrival at its instance or its answer's
// arrival at its client.
func (s *sim) answerAttempt(e simEvent) {
	r := &s.reqs[e.slot]
	if r.gen != e.gen {
		return // ended, and its instance dropped it
	}
	if r.state&stIncoming != 0 {
		s.arrivedIn(e.slot)
		return
	}
	if s.cal != nil {
		s.answerAttemptCalibrated(e.slot)
		return
	}
	if r.kind != kindServe {
		s.attemptAnswered(e.slot, int(r.status), nil)
		return
	}
	s.insts[r.inst].busyFor += s.clock.now - r.began
	s.release(int(r.inst))
	if s.pol.tiers.calls(s, e.slot) {
		return // answered when its downstream calls end
	}
	if r.state&stWaiting == 0 {
		s.freeSlot(e.slot) // abandoned, kept to the end of its service
		return
	}
	s.attemptAnswered(e.slot, 200, nil)
}

// answerAttemptCalibrated is answerCalibrated for an attempt.
func (s *sim) answerAttemptCalibrated(i int32) {
	r := &s.reqs[i]
	switch {
	case r.state&stOutbound != 0:
		r.state &^= stOutbound
		s.deliver(i)
		return
	case r.state&stInbound != 0:
		if r.kind == kindReset {
			s.attemptAnswered(i, 0, errSimReset)
		} else {
			s.attemptAnswered(i, int(r.status), nil)
		}
		return
	}
	status := int(r.status)
	if r.kind == kindServe {
		s.insts[r.inst].busyFor += s.clock.now - r.began
		s.release(int(r.inst))
		if s.pol.tiers.calls(s, i) {
			return // sent back when its downstream calls end
		}
		if r.state&stWaiting == 0 {
			s.freeSlot(i)
			return
		}
		status = 200
	}
	s.sendBack(i, r.kind, status)
}

// abortPolicy drops the requests whose client still waits, as
// abortWaiting does.
func (s *sim) abortPolicy() {
	p := s.pol
	for gi := range p.reqs {
		g := &p.reqs[gi]
		if !g.live {
			continue
		}
		for _, j := range g.inflight {
			s.reqs[j].ticket = strategies.Ticket{}
		}
		if g.parent < 0 {
			s.gens[g.src].coll.Abort()
		}
		p.freeReq(int32(gi))
	}
}

// allocAttempt takes a slot for an attempt of request gi sent to instance
// ep at t; it is not linked in the waiting list.
func (s *sim) allocAttempt(gi int32, ep int, t time.Duration, tk strategies.Ticket, kind uint8, state uint16) int32 {
	p := s.pol
	i := s.free
	if i >= 0 {
		s.free = s.reqs[i].next
	} else {
		if len(s.reqs) >= maxPolicySlot {
			panic("harness: sim: too many attempts in flight")
		}
		i = int32(len(s.reqs))
		s.reqs = append(s.reqs, simReq{})
	}
	g := &p.reqs[gi]
	r := &s.reqs[i]
	r.at, r.ticket, r.inst, r.kind, r.state = t, tk, int32(ep), kind, state
	r.lb, r.src, r.prev, r.next = g.lb, g.src, -1, -1
	for int(i) >= len(p.groupOf) {
		p.groupOf = append(p.groupOf, 0)
	}
	p.groupOf[i] = gi
	g.inflight = append(g.inflight, i)
	return i
}

// forget removes attempt i from request gi's attempts in flight.
func (p *policySim) forget(gi, i int32) {
	g := &p.reqs[gi]
	for k, j := range g.inflight {
		if j == i {
			g.inflight = append(g.inflight[:k], g.inflight[k+1:]...)
			return
		}
	}
}

// allocReq takes a request slot, reset but for its lists' storage.
func (p *policySim) allocReq() int32 {
	i := p.free
	if i >= 0 {
		p.free = p.reqs[i].next
	} else {
		if len(p.reqs) >= maxPolicySlot {
			panic("harness: sim: too many requests in flight")
		}
		i = int32(len(p.reqs))
		p.reqs = append(p.reqs, polReq{})
	}
	g := &p.reqs[i]
	*g = polReq{inflight: g.inflight[:0], tried: g.tried[:0], gen: g.gen, lastInst: strategies.NoHost,
		lastFailInst: strategies.NoHost, live: true, parent: -1}
	p.live++
	return i
}

// freeReq returns request slot gi to the free list; its timers become
// stale.
func (p *policySim) freeReq(gi int32) {
	g := &p.reqs[gi]
	g.gen++
	g.live = false
	g.lastErr = nil
	g.inflight, g.tried = g.inflight[:0], g.tried[:0]
	g.next = p.free
	p.free = gi
	p.live--
}

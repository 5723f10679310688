package sim

import "github.com/lbchaos/lbchaos/faultyserver"

// An instance's plan for a request, as faultyserver's admit carries it
// out, in every engine (sim.go, attempts.go, calibrate.go): the plan is
// drawn as the request reaches its instance, and carried out then, or,
// when it has a Latency, that much later, the request on its way in
// (stIncoming) in the meantime. On its way in a request holds no worker,
// is not queued and counts in no load; its client's timeout still runs
// from its send, and a request whose client gives up meanwhile is dropped
// (freed: its event becomes stale) without ever taking a worker, with or
// without keep_abandoned, as the real server drops it.

// plan draws instance in's plan for a request of a client of zone cz (-1:
// none) reaching it now: the service time, then, under a fault that acts
// on the request (actsOn), the fault's plan, both from the instance's own
// source. See sim.planFor, which adds the way between zones.
func (in *simInstance) plan(cz int32) faultyserver.Action {
	base := in.sampler.Sample()
	if in.fault == nil || !in.actsOn(cz) {
		return faultyserver.Action{Kind: faultyserver.ActionServe, Service: base}
	}
	return faultyserver.SimulatedPlan(in.fault, base, in.rng)
}

// admit has request i, whose slot is taken and which reaches its instance
// now, carried out as a says: at once, or after a's Latency.
func (s *sim) admit(i int32, a faultyserver.Action) {
	r := &s.reqs[i]
	switch a.Kind {
	case faultyserver.ActionReset:
		r.kind = kindReset
	case faultyserver.ActionFail:
		r.kind, r.status, r.service = kindFail, int32(a.Status), a.Delay
	case faultyserver.ActionHang:
		r.kind = kindHang
	default:
		r.kind, r.service = kindServe, a.Service
	}
	if a.Latency > 0 {
		r.state |= stIncoming
		s.reordered = true
		s.schedule(s.clock.now+a.Latency, i)
		return
	}
	s.carryOut(i)
}

// arrivedIn handles the event of request i on its way in (stIncoming):
// the end of its way, when its plan is carried out.
func (s *sim) arrivedIn(i int32) {
	s.reqs[i].state &^= stIncoming
	s.carryOut(i)
}

// carryOut carries out request i's plan (its kind, status and service, a
// fail's delay in service) now: a reset or a full queue's 503 answers at
// once; a fail answers after its delay without a worker; a hang never
// answers; a request to serve takes a free worker until its service ends,
// else waits in its instance's queue.
func (s *sim) carryOut(i int32) {
	r := &s.reqs[i]
	in := &s.insts[r.inst]
	now := s.clock.now
	switch r.kind {
	case kindReset:
		s.answerAtOnce(i, kindReset, 0)
	case kindFail:
		s.schedule(now+r.service, i)
	case kindHang:
	default:
		switch {
		case in.workers == 0 || in.busy < in.workers:
			// A free worker means an empty queue: release hands a worker
			// straight to the oldest waiter.
			in.busy++
			r.state |= stWorking
			r.began = now
			s.schedule(now+r.service, i)
		case s.qlimit > 0 && in.queue.len() >= s.qlimit:
			s.answerAtOnce(i, kindFail, 503)
		default:
			r.state |= stQueued
			in.queue.push(i)
		}
	}
}

// answerAtOnce ends request i, which its instance answers now with status
// (kindFail) or resets (kindReset): calibrated, the answer goes back to
// its client; else it reaches it now.
func (s *sim) answerAtOnce(i int32, kind uint8, status int) {
	var err error
	if kind == kindReset {
		err = errSimReset
	}
	switch {
	case s.cal != nil:
		s.sendBack(i, kind, status)
	case s.pol != nil:
		s.attemptAnswered(i, status, err)
	default:
		s.end(i, status, err, false)
		s.freeSlot(i)
	}
}

// keepsArrivalOrder reports whether every request reaches its instance
// in the order it was sent, so that the request timing out is always at
// its queue's front (see sim): not when calibrated, nor once a plan had a
// Latency.
func (s *sim) keepsArrivalOrder() bool { return s.cal == nil && !s.reordered }

package sim

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
)

// policySim simulates the client of a strategy with a retry or hedge
// policy (strategies.Policy), as the real engine's client carries one out:
// a client request makes one attempt or more, each a pick of the strategy
// sent to its instance.
//
// Model. A request arriving at t0 has the deadline t0 + the experiment's
// timeout, across all its attempts and backoffs. Policy.Start, then its
// first attempt is picked. Each attempt has its own deadline: the earlier
// of its send plus the per-try timeout (when there is one) and the
// request's deadline. An attempt ends with an answer, a reset, or its own
// deadline (a timeout of its instance); every attempt's pick is finished
// with its own latency (from its send) and recorded at its instance
// (Collector.AddAttempt). The first attempt that does not fail wins: the
// request ends with its answer and every other attempt in flight is
// cancelled (Outcome.Cancelled), which its instance drops as it drops an
// abandoned request (unless keep_abandoned). A failed attempt while another
// is in flight waits for it; with none in flight the request ends as a
// timeout if its deadline has been reached, else Policy.Retry decides: a
// retry is sent after its backoff (avoiding the hosts tried with
// other_host), or, when the backoff reaches the deadline, the request ends
// as a timeout at its deadline; a refused retry ends the request with that
// attempt's outcome. A retry that finds no host ends the request with the
// failure it had. With hedging, HedgeDelay is read after the first attempt
// is sent; each delay later, while an attempt is in flight and fewer than
// MaxHedged attempts were sent, another attempt goes to a host not yet
// tried; a hedge that is not sent (none in flight, no host) ends the
// hedging. At the request's deadline every attempt still in flight ends as
// a timeout of its instance and the request ends as a timeout. A request's
// latency runs from t0 to its end; its instance is the winner's, or the
// last one tried; its attempts are those sent.
//
// Data structures. Attempts are requests of the slab (simReq), served by
// the instances as sim.go serves requests, but not linked in the waiting
// list: per-try timeouts and backoffs break the order of deadlines that
// list relies on. Client requests live in a slab of their own (polReq),
// and every timer (request deadlines, per-try timeouts, hedges, retries)
// is an event of a second eventQueue, whose slot packs the timer's kind
// with the request's or attempt's slot; its generation makes a timer stale
// once what it names has ended. Simultaneous happenings are ordered:
// control, then answers, then timers in the order they were set, then the
// arrival. The loop (runPolicy) is a copy of run's, so that a strategy
// without a policy pays nothing for this one.
type policySim struct {
	// By balancer: the client's replicas, then, with tiers, each tier
	// caller's (tiers.go); its policy (nil: one attempt a request), and
	// the instance id of its endpoint 0.
	lbs   []*strategies.Balancer
	pols  []*strategies.Policy
	base  []int32
	tiers *simTiers // nil without tiers
	// methods picks which of the experiment's requests request k is, as
	// the real generator does, and nonIdem tells by that request whether
	// its method is not idempotent (POST, PATCH); nil without a list.
	methods *engine.RequestPicker
	nonIdem []bool

	reqs    []polReq
	free    int32   // first free polReq, -1 if none
	live    int     // requests whose client waits
	groupOf []int32 // by attempt slot: its request
	timers  eventQueue
	seq     uint64
}

// polReq is a client request under a policy.
type polReq struct {
	at, deadline time.Duration
	hedgeDelay   time.Duration
	key          uint64
	inflight     []int32 // its attempts in flight (slots), oldest first
	tried        []int   // the hosts its attempts went to, in order
	// The latest failed attempt's outcome, which a retry that finds no
	// host ends the request with.
	lastErr      error
	lastStatus   int32
	lastFailInst int32
	lastTimeout  bool
	lastInst     int32 // the instance of the latest attempt sent; NoHost if none
	lb, src      int32
	next         int32 // free list
	// parent is the attempt (slot) of a tier instance this request is a
	// downstream call of, of generation pgen, with callsLeft calls to
	// make; -1 for a client request.
	parent, callsLeft int32
	pgen              uint32
	gen               uint32
	sent              int32 // attempts sent
	retries           int32 // retries allowed so far
	hasKey            bool
	nonIdem           bool
	live              bool
	retryPending      bool // a retry allowed, waiting for its backoff
}

// Kinds of attempts.
const (
	attemptFirst = iota
	attemptRetry
	attemptHedge
)

// Attempt states, beside those of sim.go and calibrate.go: an attempt sent
// as a retry (it releases its place in the concurrency budget at its end)
// or as a hedge.
const (
	stRetry uint16 = 1 << (iota + 6)
	stHedge
)

// maxPolicySlot bounds the slots a timer can name (timer packs two bits of
// kind with the slot).
const maxPolicySlot = math.MaxInt32 >> 2

// newPolicy sets the simulation up for the strategy's client policy, if
// it has one: it is then run by runPolicy.
func (s *sim) newPolicy(exp *experiments.Experiment, name string) error {
	if s.lbs[0].Policy() == nil && len(exp.Tiers) == 0 {
		return nil
	}
	p := &policySim{free: -1}
	for _, lb := range s.lbs {
		p.add(lb, 0)
	}
	if len(exp.Tiers) > 0 {
		if err := p.newTiers(exp, name, &s.clock); err != nil {
			return err
		}
	}
	if r := exp.Requests; r != nil {
		if pk := engine.NewRequestPicker(r, exp.Seed); pk != nil {
			p.methods, p.nonIdem = pk, make([]bool, len(r.List))
			for i, q := range r.List {
				p.nonIdem[i] = q.Method == http.MethodPost || q.Method == http.MethodPatch
			}
		}
	}
	for i := range s.gens {
		s.gens[i].coll.CountAttempts()
	}
	s.pol = p
	return nil
}

// add adds balancer lb, whose endpoint 0 is instance base.
func (p *policySim) add(lb *strategies.Balancer, base int) {
	p.lbs = append(p.lbs, lb)
	p.pols = append(p.pols, lb.Policy())
	p.base = append(p.base, int32(base))
}

// arrivePolicy starts the client request due at t.
func (s *sim) arrivePolicy(t time.Duration) {
	p := s.pol
	k := s.k
	s.k++
	s.arrival = s.due(s.k)
	src := int32(k % uint64(len(s.gens)))
	s.gens[src].sent++
	gi := p.allocReq()
	g := &p.reqs[gi]
	g.at, g.deadline, g.src, g.lb = t, t+s.timeout, src, int32(k%uint64(len(s.lbs)))
	if s.keys != nil {
		g.key, g.hasKey = s.keys.Draw(k, t)
	}
	if p.methods != nil {
		g.nonIdem = p.nonIdem[p.methods.Pick(k)]
	}
	s.startRequest(gi)
}

// startRequest sends request gi's first attempt now and sets its timers.
func (s *sim) startRequest(gi int32) {
	p := s.pol
	g := &p.reqs[gi]
	t := g.at
	gen := g.gen
	pol := p.pols[g.lb]
	pol.Start()
	if !s.sendAttempt(gi, attemptFirst) {
		s.endRequest(gi, strategies.NoHost, 0, engine.ErrNoHost, false)
		return
	}
	if p.reqs[gi].gen != gen {
		return // ended at once
	}
	p.timer(t+s.timeout, timerDeadline, gi, gen)
	if pol.MaxHedged() > 1 {
		if d, ok := pol.HedgeDelay(); ok {
			p.reqs[gi].hedgeDelay = d
			p.timer(t+d, timerHedge, gi, gen)
		}
	}
}

// sendAttempt picks and sends an attempt of request gi now. It reports
// false, having finished the pick, when the strategy allowed no host. An
// attempt that fails at once (a reset, a full queue) is ended before it
// returns, which may end the request.
func (s *sim) sendAttempt(gi int32, kind int) bool {
	p := s.pol
	g := &p.reqs[gi]
	t := s.clock.now
	lb := p.lbs[g.lb]
	req := strategies.Request{Key: g.key, HasKey: g.hasKey, NonIdempotent: g.nonIdem}
	if kind == attemptHedge || (kind == attemptRetry && p.pols[g.lb].OtherHost()) {
		req.Exclude = g.tried
	}
	tk := lb.PickTicket(req)
	if tk.Endpoint() == strategies.NoHost {
		lb.Finish(tk, strategies.Outcome{Err: engine.ErrNoHost})
		return false
	}
	ep := int(p.base[g.lb]) + tk.Endpoint() // the instance
	g.sent++
	g.tried = append(g.tried, tk.Endpoint())
	g.lastInst = int32(ep)
	state := stWaiting
	switch kind {
	case attemptRetry:
		state |= stRetry
	case attemptHedge:
		state |= stHedge
		p.pols[g.lb].Hedged()
	}
	if s.cal != nil {
		pre, post := s.cal.draw()
		i := s.allocAttempt(gi, ep, t, tk, kindServe, state|stOutbound)
		s.reqs[i].post = uint32(post)
		s.schedule(t+pre, i)
		s.perTry(gi, i)
		return true
	}
	a := s.planFor(ep, g.lb)
	i := s.allocAttempt(gi, ep, t, tk, kindServe, state)
	gen := s.reqs[i].gen
	s.admit(i, a)
	if s.reqs[i].gen == gen {
		s.perTry(gi, i) // not ended at once (a reset, a full queue)
	}
	return true
}

// perTry sets attempt i's per-try timeout, when it comes before its
// request's deadline (which otherwise ends the attempt).
func (s *sim) perTry(gi, i int32) {
	p := s.pol
	perTry := p.pols[p.reqs[gi].lb].PerTryTimeout()
	if perTry <= 0 {
		return
	}
	if at := s.clock.now + perTry; at < p.reqs[gi].deadline {
		p.timer(at, timerPerTry, i, s.reqs[i].gen)
	}
}

// attemptInfo is what ending an attempt needs of it, kept once its slot
// is freed.
type attemptInfo struct {
	tk    strategies.Ticket
	at    time.Duration // sent
	inst  int32
	state uint16
}

func (s *sim) attemptOf(i int32) attemptInfo {
	r := &s.reqs[i]
	return attemptInfo{tk: r.ticket, at: r.at, inst: r.inst, state: r.state}
}

// attemptAnswered ends attempt i, whose answer (status, or the error err)
// reaches its client now.
func (s *sim) attemptAnswered(i int32, status int, err error) {
	gi := s.pol.groupOf[i]
	a := s.attemptOf(i)
	s.pol.forget(gi, i)
	s.freeSlot(i)
	o := s.finishAttempt(gi, a, status, err, false, false)
	s.decide(gi, a, o)
}

// attemptTimedOut ends attempt i at its per-try timeout.
func (s *sim) attemptTimedOut(i int32) {
	gi := s.pol.groupOf[i]
	a := s.attemptOf(i)
	s.pol.forget(gi, i)
	s.abandon(i)
	o := s.finishAttempt(gi, a, 0, context.DeadlineExceeded, true, false)
	s.decide(gi, a, o)
}

// finishAttempt reports attempt a of request gi, ending now, to the
// strategy, its policy and the collector, and returns its outcome. An
// answer carries its instance's load, as report's does.
func (s *sim) finishAttempt(gi int32, a attemptInfo, status int, err error, timeout, cancelled bool) strategies.Outcome {
	p := s.pol
	g := &p.reqs[gi]
	lat := s.clock.now - a.at
	o := strategies.Outcome{Status: status, Err: err, Timeout: timeout, Latency: lat, Cancelled: cancelled}
	if status != 0 {
		in := &s.insts[a.inst]
		o.Load, o.HasLoad = float64(in.busy+in.queue.len()), true
	}
	pol := p.pols[g.lb]
	pol.Observe(o)
	p.lbs[g.lb].Finish(a.tk, o)
	if a.state&stRetry != 0 {
		pol.RetryEnded()
	}
	at := engine.Attempt{
		Instance: int(a.inst), SentAt: a.at, Latency: lat,
		Success: status >= 200 && status < 300 && err == nil, Timeout: timeout, Cancelled: cancelled,
	}
	if g.parent >= 0 {
		s.gens[g.src].coll.AddTierAttempt(at)
	} else {
		s.gens[g.src].coll.AddAttempt(at)
	}
	return o
}

// decide moves request gi on after its attempt a ended with o (not
// cancelled): a win, a wait for the others, a retry, or its end.
func (s *sim) decide(gi int32, a attemptInfo, o strategies.Outcome) {
	p := s.pol
	g := &p.reqs[gi]
	if !o.Failed() {
		s.win(gi, a, o)
		return
	}
	g.lastStatus, g.lastErr, g.lastTimeout, g.lastFailInst = int32(o.Status), o.Err, o.Timeout, a.inst
	if len(g.inflight) > 0 {
		return // another attempt may still answer
	}
	now := s.clock.now
	if now >= g.deadline {
		s.endRequest(gi, a.inst, 0, context.DeadlineExceeded, true)
		return
	}
	req := strategies.Request{Key: g.key, HasKey: g.hasKey, NonIdempotent: g.nonIdem}
	wait, ok := p.pols[g.lb].Retry(o, int(g.retries), req)
	if !ok {
		s.endRequest(gi, a.inst, o.Status, o.Err, o.Timeout)
		return
	}
	g.retries++
	g.retryPending = true
	if at := now + wait; at < g.deadline {
		p.timer(at, timerRetry, gi, g.gen)
	} // else the deadline ends the request, and the retry with it
}

// win ends request gi with attempt a's answer o, cancelling its other
// attempts in flight.
func (s *sim) win(gi int32, a attemptInfo, o strategies.Outcome) {
	g := &s.pol.reqs[gi]
	for _, j := range g.inflight {
		b := s.attemptOf(j)
		s.abandon(j)
		s.finishAttempt(gi, b, 0, context.Canceled, false, true)
	}
	g.inflight = g.inflight[:0]
	if a.state&stHedge != 0 {
		s.pol.pols[g.lb].HedgeWon()
	}
	s.endRequest(gi, a.inst, o.Status, nil, false)
}

// expirePolicy ends request gi at its deadline: its attempts in flight end
// as timeouts of their instances, and it ends as a timeout.
func (s *sim) expirePolicy(gi int32) {
	p := s.pol
	g := &p.reqs[gi]
	for _, j := range g.inflight {
		b := s.attemptOf(j)
		s.abandon(j)
		s.finishAttempt(gi, b, 0, context.DeadlineExceeded, true, false)
	}
	g.inflight = g.inflight[:0]
	if g.retryPending {
		g.retryPending = false
		p.pols[g.lb].RetryEnded()
	}
	s.endRequest(gi, g.lastInst, 0, context.DeadlineExceeded, true)
}

// endRequest ends client request gi now with the given outcome, recorded
// at instance inst (NoHost: it reached none).
func (s *sim) endRequest(gi, inst int32, status int, err error, timeout bool) {
	p := s.pol
	g := &p.reqs[gi]
	if g.parent >= 0 {
		s.callEnded(gi, status >= 200 && status < 300 && err == nil)
		return
	}
	lat := s.clock.now - g.at
	var o engine.Outcome
	o.Instance = int(inst)
	o.SentAt = g.at
	o.Latency = lat
	o.Success = status >= 200 && status < 300 && err == nil
	o.Timeout = timeout
	o.Key, o.HasKey = g.key, g.hasKey
	o.Attempts = g.sent
	o.ClientZone = s.clientZone(g.lb)
	s.gens[g.src].coll.Add(o)
	if s.abort.watch != nil {
		s.abort.watch.Add(o)
	}
	if s.hooks.result != nil {
		s.hooks.result(o, strategies.Outcome{Status: status, Err: err, Timeout: timeout, Latency: lat})
	}
	p.freeReq(gi)
}

// abandon lets attempt i's instance drop it, its client gone (cancelled or
// timed out), as expire drops a request; an attempt may be anywhere in its
// queue.
func (s *sim) abandon(i int32) {
	r := &s.reqs[i]
	r.state &^= stWaiting
	r.ticket = strategies.Ticket{}
	if s.pol.tiers != nil && s.pol.tiers.abandonCalling(s, i) {
		return
	}
	s.drop(i, true)
}

package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/strategies"
)

// never is a virtual time later than anything scheduled.
const never = time.Duration(math.MaxInt64)

// checkEvery is how many steps the engine takes between looks at its
// context.
const checkEvery = 1 << 12

// sim simulates one strategy's attack: a discrete-event simulation in
// virtual time of the real engine's open-loop client, the strategy, and the
// instances (faultyserver.Server) with their faults.
//
// Model. Request k arrives at the schedule's Due(k) if that is before the
// experiment's duration; the strategy picks its instance then, and the
// instance plans it at once, as Server.plan does: it samples the service
// time and, under a fault, passes it to the fault's Plan, both drawing from
// the instance's own source. Serve takes a worker if one is free (Workers 0
// = unlimited) and answers 200 after the service time, or waits in the
// instance's FIFO queue; a full queue (QueueLimit) answers 503 at once. Fail
// answers its status after its delay without a worker, Hang never answers,
// Reset fails at once with a transport error. A plan with a Latency is
// carried out that much later, the request holding no worker meanwhile
// (admit.go); with zones, a request from a client of one zone to an
// instance of another waits the cross-zone latency so too, and a fault
// limited to some zones' clients acts on their requests alone (see
// simZones). A request not answered within the experiment's timeout of
// its arrival ends as a timeout at exactly that time. Its instance then drops it from the queue or frees its worker, or,
// with KeepAbandoned, leaves it queued or serving until its service ends.
// Fault changes (engine.FaultOps) take effect for requests arriving at or after
// their time. Every request is finished once (Balancer.Finish), at its end, with the
// latency from arrival.
//
// Simultaneous happenings are ordered: fault changes, host-set changes,
// probes, load polls (loadPoll) and collector sweeps, then answers in the order they were scheduled, then timeouts in arrival
// order, then the arrival. So an answer due at the deadline is an answer,
// and a worker freed at t is free for a request arriving at t.
//
// Data structures. Requests live in a slab recycled through a free list, so
// memory follows the requests in flight, not the requests sent. Those whose
// client still waits are linked in arrival order; as every request has the
// same timeout, the head of that list is the next timeout, with no timer
// per request. Answers due later (service ends, fail delays, ends of a
// request's way in) are ordered by (time, sequence number) in an
// eventQueue: a FIFO for those scheduled in time order, a 4-ary min-heap
// for the rest. A request's slot carries a
// generation number, bumped when the slot is freed: an event whose
// generation no longer matches is stale (its request timed out and was
// dropped) and is skipped. A queue never holds a stale entry: without
// KeepAbandoned, the request timing out is always at its queue's front, as
// every request queued before it arrived earlier and timed out or left
// before it, unless requests reach their instances out of the order they
// were sent in (keepsArrivalOrder), when it is looked for in its queue.
type sim struct {
	// Immutable after newSim.
	timeout  time.Duration
	duration time.Duration
	qlimit   int  // per instance; 0 = unbounded
	keep     bool // KeepAbandoned
	hooks    simHooks

	clock simClock
	lbs   []*strategies.Balancer // replicas; request k goes to k mod len
	keys  *engine.KeySource      // nil: requests carry no key
	// gens holds the generators: request k is generator k mod len's, and
	// its outcome goes to that generator's collector. One, unless the
	// experiment spreads its load (generators: N; see generators.go).
	gens   []simGenerator
	sched  engine.Schedule
	cursor *engine.PoissonCursor // reads sched in order, when Poisson
	insts  []simInstance
	events eventQueue
	seq    uint64 // of the next event
	// outcomes gathers the outcomes for the generators' collectors.
	outcomes outcomeRuns

	reqs       []simReq
	free       int32 // first free slot, -1 if none; linked through next
	head, tail int32 // requests whose client waits, oldest first; -1 if none
	waiting    int   // length of that list

	ops       []engine.FaultOp
	opFrom    []zoneMask // by op: the client zones its fault acts on
	nextOp    int
	nextSweep time.Duration

	joinAt    []time.Duration // when the host set grows (engine.JoinSteps)
	joinHosts [][]int
	nextJoin  int
	probe     strategies.ProbeConfig
	nextProbe time.Duration // never without active health checks
	loads     loadPoll
	// nextControl is the earliest of the times above (controlDue).
	nextControl time.Duration

	k       uint64        // index of the next arrival
	arrival time.Duration // its time, never when there is none

	cal   *calibrated // nil: no transport overhead (see Calibration)
	zones *simZones   // nil without zones (see simZones)
	pol   *policySim  // nil: one attempt per request (see policySim)
	// reordered is set once a plan had a Latency: requests may then reach
	// their instance in another order than they were sent in.
	reordered bool

	abort simAbort // the abort conditions (abort.go)
}

// simInstance is one simulated faultyserver.Server.
type simInstance struct {
	rng     *rand.Rand
	sampler *faultyserver.Sampler
	fault   faultyserver.Fault // nil when none
	from    zoneMask           // the client zones fault acts on; 0: all
	workers int                // 0 = unlimited
	busy    int                // workers held
	busyFor time.Duration      // worker time spent, as Stats.BusyS
	queue   ring[int32]        // waiting for a worker, oldest first
}

func newSim(exp *experiments.Experiment, name string, hooks simHooks, events *engine.EventLog) (*sim, error) {
	n := exp.Instances.Count
	s := &sim{
		timeout:   exp.Timeout,
		duration:  exp.Duration,
		qlimit:    exp.Instances.QueueLimit,
		keep:      exp.Instances.KeepAbandoned,
		hooks:     hooks,
		sched:     engine.ExperimentSchedule(exp),
		insts:     make([]simInstance, n),
		free:      -1,
		head:      -1,
		tail:      -1,
		ops:       engine.FaultOps(exp.Faults, exp.Duration),
		nextSweep: time.Second,
		nextProbe: never,
		keys:      engine.ExperimentKeys(exp),
	}
	if p, ok := s.sched.(*engine.PoissonSchedule); ok {
		s.cursor = p.Cursor()
	}
	s.joinAt, s.joinHosts = engine.JoinSteps(exp)
	s.opFrom = fromMasks(exp, s.ops)
	for _, op := range s.ops {
		if op.Instance < 0 || op.Instance >= n {
			return nil, fmt.Errorf("faults[%d]: instance %d does not exist (the fleet has %d)", op.Index, op.Instance, n)
		}
	}
	for i := range s.insts {
		in := exp.Instances.Instance(i)
		rng := rand.New(faultyserver.NewSource(fleet.InstanceSeed(exp.Seed, i)))
		smp, err := faultyserver.NewSampler(in.Service, rng)
		if err != nil {
			return nil, fmt.Errorf("instance %d: service: %w", i, err)
		}
		s.insts[i] = simInstance{rng: rng, sampler: smp, workers: in.Workers}
	}
	if err := s.newGenerators(exp, name, hooks.stream, events); err != nil {
		return nil, err
	}
	for _, lb := range s.lbs {
		lb.SetSerial() // the simulation runs on one goroutine
	}
	s.zones = newZones(exp, len(s.lbs), n)
	if err := s.newPolicy(exp, name); err != nil {
		return nil, err
	}
	if pc, ok := s.lbs[0].Probes(); ok {
		s.probe, s.nextProbe = pc, pc.Interval
	}
	s.loads = newLoadPoll(s.gens, n)
	s.outcomes = newOutcomeRuns(len(s.gens), n, len(exp.Zones))
	s.arrival = s.due(0)
	s.abort = newSimAbort(exp, name)
	s.nextControl = s.controlDue()
	return s, nil
}

// due returns when arrival k is scheduled, or never when that is not before
// the end of the attack. It is asked for k = 0, 1, 2... in turn.
func (s *sim) due(k uint64) time.Duration {
	if s.cursor != nil {
		if d := s.cursor.Next(); d < s.duration {
			return d
		}
		return never
	}
	if d, ok := s.sched.Due(k); ok && d < s.duration {
		return d
	}
	return never
}

// run simulates until every request has ended, or until done is closed.
// It reports whether it was interrupted.
func (s *sim) run(done <-chan struct{}) (interrupted bool) {
	if s.pol != nil {
		return s.runPolicy(done)
	}
	for step := 1; ; step++ {
		if step%checkEvery == 0 {
			select {
			case <-done:
				return true
			default:
			}
		}
		tEvent := s.events.next()
		tTimeout := never
		if s.head >= 0 {
			tTimeout = s.reqs[s.head].at + s.timeout
		}
		tControl := s.nextControl
		if s.arrival == never && s.waiting == 0 {
			return false
		}
		switch t := min(s.arrival, tEvent, tTimeout, tControl); t {
		case tControl:
			s.clock.now = t
			s.control(t)
			s.nextControl = s.controlDue()
			if s.abort.tripped != nil {
				return true
			}
		case tEvent:
			s.clock.now = t
			s.answer(s.events.pop())
		case tTimeout:
			s.clock.now = t
			s.expire(s.head)
		default:
			s.clock.now = t
			s.arrive(t)
		}
	}
}

// controlDue returns when the next fault change, host-set change, round
// of probes, load poll or collector sweep is due. Only control moves
// those times, so run asks after each control, not at every step.
func (s *sim) controlDue() time.Duration {
	t := min(s.nextSweep, s.nextProbe, s.loads.next, s.abort.next)
	if s.nextOp < len(s.ops) {
		t = min(t, s.ops[s.nextOp].At)
	}
	if s.nextJoin < len(s.joinAt) {
		t = min(t, s.joinAt[s.nextJoin])
	}
	return t
}

// control applies the fault change, host-set change, round of probes,
// load poll or collector sweep due at t.
func (s *sim) control(t time.Duration) {
	if s.nextOp < len(s.ops) && s.ops[s.nextOp].At == t {
		op := s.ops[s.nextOp]
		in := &s.insts[op.Instance]
		in.fault, in.from = op.Fault, s.opFrom[s.nextOp] // nil clears
		s.nextOp++
		return
	}
	if s.nextJoin < len(s.joinAt) && s.joinAt[s.nextJoin] == t {
		for _, lb := range s.lbs {
			_ = lb.SetHosts(s.joinHosts[s.nextJoin]) // validated by construction
		}
		s.nextJoin++
		return
	}
	if s.nextProbe == t {
		for i := range s.insts {
			s.probeInstance(i)
		}
		s.nextProbe += s.probe.Interval
		if s.nextProbe >= s.duration {
			s.nextProbe = never
		}
		return
	}
	if s.loads.next == t {
		s.loads.poll(s.insts, s.duration)
		return
	}
	if s.abort.next == t {
		s.judge(t)
		return
	}
	s.outcomes.flush(s.gens)
	for i := range s.gens {
		s.gens[i].coll.Sweep(t)
	}
	if s.hooks.second != nil {
		s.hooks.second(t)
	}
	s.nextSweep += time.Second
}

// arrive sends the request due at t.
func (s *sim) arrive(t time.Duration) {
	k := s.k
	s.k++
	s.arrival = s.due(s.k)
	src := int32(k % uint64(len(s.gens)))
	s.gens[src].sent++

	var req strategies.Request
	if s.keys != nil {
		req.Key, req.HasKey = s.keys.Draw(k, t)
	}
	lb := int32(k % uint64(len(s.lbs)))
	tk := s.lbs[lb].PickTicket(req)
	ep := tk.Endpoint()
	if ep == strategies.NoHost {
		s.report(ep, t, lb, tk, 0, engine.ErrNoHost, false, req, src)
		return
	}
	if s.cal != nil {
		s.sendCalibrated(ep, t, req, lb, tk, src)
		return
	}
	var a faultyserver.Action
	if s.zones == nil {
		a = s.insts[ep].plan(-1) // planFor, without its call
	} else {
		a = s.planZoned(ep, lb)
	}
	s.admit(s.alloc(ep, t, req, lb, tk, kindServe, stWaiting, src), a)
}

// answer handles a service end, a fail answer, or the end of a request's
// way in.
func (s *sim) answer(e simEvent) {
	r := &s.reqs[e.slot]
	if r.gen != e.gen {
		return // the request timed out and its instance dropped it
	}
	if r.state&stIncoming != 0 {
		s.arrivedIn(e.slot)
		return
	}
	if s.cal != nil {
		s.answerCalibrated(e.slot)
		return
	}
	if r.kind == kindServe {
		s.insts[r.inst].busyFor += s.clock.now - r.began
		s.release(int(r.inst))
		if r.state&stWaiting != 0 {
			s.end(e.slot, 200, nil, false)
		}
	} else {
		s.end(e.slot, int(r.status), nil, false)
	}
	s.freeSlot(e.slot)
}

// expire ends request i, the oldest whose client waits, as a timeout.
func (s *sim) expire(i int32) {
	s.end(i, 0, context.DeadlineExceeded, true)
	s.drop(i, !s.keepsArrivalOrder())
}

// drop lets request i's instance drop it, its client gone: out of the
// queue, or off its worker (the server stops serving a request whose
// client went away), unless keep_abandoned keeps it there until its
// service ends, when its slot is freed. A queued request must be at its
// queue's front unless anywhere is set.
func (s *sim) drop(i int32, anywhere bool) {
	r := &s.reqs[i]
	switch {
	case r.state&stQueued != 0:
		if s.keep {
			return // served later for nothing; freed at its service end
		}
		q := &s.insts[r.inst].queue
		switch {
		case q.len() > 0 && *q.front() == i:
			q.pop()
		case !anywhere || !removeQueued(q, i):
			panic("harness: sim: a dropped request is not in its queue where it should be")
		}
	case r.state&stWorking != 0:
		if s.keep {
			return
		}
		s.insts[r.inst].busyFor += s.clock.now - r.began
		s.release(int(r.inst))
	}
	s.freeSlot(i)
}

// release frees a worker of instance i, handing it straight to the oldest
// queued request if any.
func (s *sim) release(i int) {
	in := &s.insts[i]
	if in.queue.len() == 0 {
		in.busy--
		return
	}
	j := in.queue.pop()
	r := &s.reqs[j]
	r.state = r.state&^stQueued | stWorking
	r.began = s.clock.now
	s.schedule(s.clock.now+r.service, j)
}

// end answers request i's client now: it leaves the waiting list and its
// outcome goes to the strategy and the collector.
func (s *sim) end(i int32, status int, err error, timeout bool) {
	r := &s.reqs[i]
	if r.prev >= 0 {
		s.reqs[r.prev].next = r.next
	} else {
		s.head = r.next
	}
	if r.next >= 0 {
		s.reqs[r.next].prev = r.prev
	} else {
		s.tail = r.prev
	}
	s.waiting--
	r.state &^= stWaiting
	tk := r.ticket
	r.ticket = strategies.Ticket{}
	s.report(int(r.inst), r.at, r.lb, tk, status, err, timeout, strategies.Request{Key: r.key, HasKey: r.state&stKeyed != 0}, r.src)
}

// report delivers the outcome of a request that arrived at sentAt and ends
// now.
//
// An answer (status not 0) carries the instance's load as the real server
// reports it: the other requests holding a worker or queued.
func (s *sim) report(inst int, sentAt time.Duration, lb int32, tk strategies.Ticket, status int, err error, timeout bool, req strategies.Request, src int32) {
	lat := s.clock.now - sentAt
	var load float64
	if status != 0 {
		in := &s.insts[inst]
		load = float64(in.busy + in.queue.len())
	}
	// Both outcomes are written field by field where they are used rather
	// than built and then copied: a copy reads the struct in 16-byte loads
	// right after its fields were stored in smaller pieces, which the CPU
	// cannot forward from its store buffer and stalls on (a tenth of the
	// time of a run, measured).
	s.lbs[lb].Finish(tk, strategies.Outcome{Status: status, Err: err, Timeout: timeout, Latency: lat, Load: load, HasLoad: status != 0})
	var o engine.Outcome
	o.Instance = inst
	o.SentAt = sentAt
	o.Latency = lat
	o.Success = status >= 200 && status < 300 && err == nil
	o.Timeout = timeout
	o.Key = req.Key
	o.HasKey = req.HasKey
	if s.zones != nil {
		o.ClientZone = s.zones.clientOf(lb)
	}
	s.outcomes.add(src, s.gens[src].coll, &o)
	if s.abort.watch != nil {
		s.abort.watch.Add(o)
	}
	if s.hooks.result != nil {
		s.hooks.result(o, strategies.Outcome{Status: status, Err: err, Timeout: timeout, Latency: lat, Load: load, HasLoad: status != 0})
	}
}

// schedule adds an answer for request i at t.
func (s *sim) schedule(t time.Duration, i int32) {
	s.events.push(simEvent{at: t, seq: s.seq, slot: i, gen: s.reqs[i].gen})
	s.seq++
}

package strategies

import (
	"math"
	"slices"
	"time"
)

// healthLevel is a host's health level; a larger level is worse.
type healthLevel int8

const (
	levelHealthy healthLevel = iota
	levelDegraded
	levelCritical
	levelUnhealthy

	// noJudgement is the judgement of a host with too few requests.
	noJudgement healthLevel = -1
)

var healthLevelNames = [...]string{"healthy", "degraded", "critical", "unhealthy"}

func (l healthLevel) String() string {
	if l < levelHealthy || l > levelUnhealthy {
		return "none"
	}
	return healthLevelNames[l]
}

func init() {
	registerWrapper("health", healthParams, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		cfg, err := parseHealthConfig(params)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker { return newHealth(inner, env, cfg) }, nil
	})
}

// health is the "health" wrapper: multi-level passive health after the
// notes on health checking at scale. Each host is healthy, degraded,
// critical or unhealthy, and each level is a traffic factor, weights
// (default 1:0.5:0.1:0), applied through the weighting helper: a host at
// factor f is kept for a pick with probability f and the inner Picker
// chooses among the hosts kept (see weighting); unhealthy hosts, at 0, get
// traffic only if no other given host is kept.
//
// Observation: per host a sliding window of window (default 10s) in ten
// buckets of window/10 counts requests, failures (Outcome.Failed) and the
// sum of latencies; the window covers the current bucket and the nine
// before it. A host with at least min_requests (default 20) requests in its
// window is judged: its level by error ratio is the worst level whose
// threshold it reaches (degraded_errors 0.05, critical_errors 0.2,
// unhealthy_errors 0.5; non-decreasing, each in (0, 1]), its level by
// latency the worst whose threshold its mean latency over the fleet's
// median reaches (degraded_latency 2, critical_latency 4, unhealthy_latency
// 8; non-decreasing, each in [1, 1000]); the judgement is the worse of the
// two. The fleet median is the lower median of the mean latencies of every
// endpoint with min_requests in its window, refreshed at most once per
// bucket (window/10); latency is not judged while it is 0. A host with
// fewer requests is not judged: it keeps its level, and its recovery run
// (below) neither starts nor breaks.
//
// Damping: a host worsens as soon as it is judged worse than its level, by
// any number of levels at once. It recovers one level at a time, once it
// has been judged better than its level continuously for recover (default
// 10s): the run starts with the first such judgement, any judgement not
// better than its level breaks it, and each level needs a run of its own.
// Back at healthy, its factor ramps linearly from the previous level's
// weight to 1 over ramp (default 10s).
//
// Limits: a host that stays degraded or critical (in any mix) for
// max_middle (default 60s) becomes unhealthy, unless it is on a run of
// better judgements then: it is not stuck but recovering, and the deadline
// applies again if the run breaks before it is healthy. At most
// min(floor(max_ejected*N), N-1) hosts are unhealthy at once (max_ejected
// default 0.3, in [0, 1]; 0 is allowed: none ever is, and with the default
// a fleet of three or fewer never ejects); a host that should become
// unhealthy beyond that cap becomes critical instead, so the fleet keeps
// serving from sick hosts rather than move all their traffic at once. An
// unhealthy host gets no traffic, so it cannot recover by observation:
// after recover it moves to critical on probation, with an empty window,
// and is judged afresh. Outcomes of requests picked before its latest
// ejection or probation are ignored.
//
// Every level change is an EventHealth event whose Detail names the new
// level; becoming unhealthy counts as an ejection (Ejections, Ejected).
// Levels change on done, and on Pick or Sweep for time-based changes
// (probation, max_middle, a completed recovery run, the end of a ramp).
//
// N is Env.N, every endpoint whether in the host set or not: the wrapper
// does not track membership, so a host that leaves the set keeps its level
// and its timers keep running.
//
// Cost: a done records into a bucket and the host's running sums, and
// judges the host from the sums (buckets leaving the window are subtracted
// when the host's next bucket begins);
// the fleet median costs a pass over every endpoint and a sort once per
// bucket; Pick adds nothing while every host is healthy, and a pass over
// the non-healthy ones (plus one random draw per scaled host) otherwise.
// Each pick allocates the closure that chains the inner done.
//
// Deviations from the notes: observation is passive only (combine with
// healthcheck for active probes); latency is judged by the mean, not by
// percentiles; the illustrative 30s window is 10s here, so that a fault is
// seen within seconds in short experiments. weights must start at 1: the
// factors scale hosts relative to healthy ones.
type health struct {
	// Immutable after construction.
	inner  Picker
	cfg    healthConfig
	clock  Clock
	events func(Event)
	w      *weighting
	feed   hostFeed      // gives the inner Picker the hosts kept
	limit  int           // most hosts unhealthy at once
	start  time.Time     // when bucket 0 begins
	width  time.Duration // of one bucket

	// Mutable; the Balancer's mutex guards everything below.
	buckets    []healthBucket // healthBuckets per endpoint
	windows    []healthWindow // by endpoint id: the sums of its buckets
	hosts      []hostHealth   // by endpoint id
	watched    []int          // ascending: endpoints not healthy or ramping
	nextDue    time.Time      // earliest time-based change among watched, when hasDue
	hasDue     bool
	nUnhealthy int
	nRamping   int
	ejections  int

	median    float64 // lower median of the endpoints' mean latencies, ns; 0: none
	medianIdx int64   // bucket of the last refresh of median; -1: never
	scratch   []float64
}

type hostHealth struct {
	level     healthLevel
	ramping   bool
	epoch     uint32    // bumped at ejection and at probation
	streak    time.Time // start of the run of better judgements; zero: none
	probation time.Time // unhealthy: when it moves to critical
	middleDue time.Time // degraded or critical: when max_middle runs out
	rampStart time.Time
	rampFrom  float64
}

var (
	_ Picker       = (*health)(nil)
	_ HostsUpdater = (*health)(nil)
	_ Sweeper      = (*health)(nil)
	_ ejecting     = (*health)(nil)
)

func newHealth(inner Picker, env *buildEnv, cfg healthConfig) *health {
	events := env.events
	if events == nil {
		events = func(Event) {}
	}
	clock := env.clock
	if clock == nil {
		clock = SystemClock{}
	}
	n := env.n
	return &health{
		inner:     inner,
		cfg:       cfg,
		clock:     clock,
		events:    events,
		w:         newWeighting(n, env.rand),
		feed:      newHostFeed(inner),
		limit:     max(0, min(int(math.Floor(cfg.maxEjected*float64(n)+1e-9)), n-1)),
		start:     clock.Now(),
		width:     max(cfg.window/healthBuckets, 1),
		buckets:   make([]healthBucket, n*healthBuckets),
		windows:   make([]healthWindow, n),
		hosts:     make([]hostHealth, n),
		medianIdx: -1,
	}
}

// Pick applies the time-based changes that are due, then lets the inner
// Picker choose among the hosts kept for their levels.
func (h *health) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if len(h.watched) > 0 {
		h.Sweep(h.clock.Now())
	}
	kept, changed := h.w.filter(hosts)
	if changed {
		h.feed.changed()
	}
	h.feed.sync(kept)
	ep, done := h.inner.Pick(req, kept)
	if ep == NoHost {
		// An inner wrapper allowed none (eject with every host out): no
		// host to judge.
		return NoHost, done
	}
	epoch := h.hosts[ep].epoch
	return ep, func(o Outcome) {
		done(o)
		h.observe(ep, epoch, o)
	}
}

// UpdateHosts takes hosts as the input of the level filter.
func (h *health) UpdateHosts(hosts []int) { h.w.setInput(hosts) }

// Sweep applies every time-based change due at or before now and sets the
// factors of ramping hosts for now.
func (h *health) Sweep(now time.Time) {
	if h.hasDue && !now.Before(h.nextDue) {
		h.sweepDue(now)
	}
	if h.nRamping > 0 {
		h.updateRamps(now)
	}
}

func (h *health) sweepDue(now time.Time) {
	for i := 0; i < len(h.watched); {
		ep := h.watched[i]
		if !now.Before(h.due(ep)) {
			h.evaluate(ep, now)
		}
		// evaluate changes only ep's place in watched.
		if i < len(h.watched) && h.watched[i] == ep {
			i++
		}
	}
	h.hasDue = false
	for _, ep := range h.watched {
		h.noteDue(h.due(ep))
	}
}

// observe records the outcome of a request to ep picked in the given epoch
// and judges ep.
func (h *health) observe(ep int, epoch uint32, o Outcome) {
	s := &h.hosts[ep]
	if s.epoch != epoch || s.level == levelUnhealthy {
		return
	}
	now := h.clock.Now()
	h.window(ep, h.bucketIdx(now))
	w := &h.windows[ep]
	b := &h.buckets[ep*healthBuckets+bucketSlot(w.head)]
	if b.idx != w.head { // a bucket that left the window, so zero
		b.idx = w.head
	}
	var fail int64
	if o.Failed() {
		fail = 1
	}
	b.reqs++
	b.fails += fail
	b.latency += o.Latency
	w.reqs++
	w.fails += fail
	w.latency += o.Latency
	h.evaluate(ep, now)
}

// evaluate applies ep's time-based changes due at now and judges it.
func (h *health) evaluate(ep int, now time.Time) {
	s := &h.hosts[ep]
	switch s.level {
	case levelUnhealthy:
		if !now.Before(s.probation) {
			clear(h.buckets[ep*healthBuckets : (ep+1)*healthBuckets])
			h.windows[ep] = healthWindow{head: h.windows[ep].head}
			s.epoch++
			h.setLevel(ep, levelCritical, now)
		}
		return
	case levelDegraded, levelCritical:
		if s.streak.IsZero() && !now.Before(s.middleDue) {
			if h.nUnhealthy < h.limit {
				h.setLevel(ep, levelUnhealthy, now)
				return
			}
			// At the cap: critical at worst, and try again a bucket later.
			h.setLevel(ep, levelCritical, now)
			s.middleDue = now.Add(h.width)
		}
	case levelHealthy:
		if s.ramping && !now.Before(s.rampStart.Add(h.cfg.ramp)) {
			s.ramping = false
			h.nRamping--
			h.w.set(ep, h.cfg.weights[levelHealthy])
			h.watch(ep)
		}
	}

	t := h.judge(ep, now)
	switch {
	case t == noJudgement:
	case t > s.level:
		if t == levelUnhealthy && h.nUnhealthy >= h.limit {
			t = levelCritical
		}
		if t > s.level {
			h.setLevel(ep, t, now)
			return
		}
		h.breakRun(ep)
	case t == s.level:
		h.breakRun(ep)
	case s.streak.IsZero():
		s.streak = now
		h.noteDue(now.Add(h.cfg.recover))
	}
	if s.streak.IsZero() || now.Sub(s.streak) < h.cfg.recover {
		return
	}
	// Recover one level.
	from := s.level
	h.setLevel(ep, from-1, now)
	if t != noJudgement && t < s.level {
		s.streak = now
		h.noteDue(now.Add(h.cfg.recover))
	}
	if s.level == levelHealthy && h.cfg.weights[from] < h.cfg.weights[levelHealthy] {
		s.ramping = true
		s.rampStart = now
		s.rampFrom = h.cfg.weights[from]
		h.nRamping++
		h.w.set(ep, s.rampFrom)
		h.watch(ep)
	}
}

// breakRun ends ep's run of better judgements, if any, which makes its
// max_middle deadline count again.
func (h *health) breakRun(ep int) {
	s := &h.hosts[ep]
	if s.streak.IsZero() {
		return
	}
	s.streak = time.Time{}
	h.noteDue(h.due(ep))
}

// setLevel moves ep to level l at now.
func (h *health) setLevel(ep int, l healthLevel, now time.Time) {
	s := &h.hosts[ep]
	old := s.level
	if old == l {
		return
	}
	s.level = l
	s.streak = time.Time{}
	if s.ramping {
		s.ramping = false
		h.nRamping--
	}
	if old == levelUnhealthy {
		h.nUnhealthy--
	}
	switch l {
	case levelUnhealthy:
		h.nUnhealthy++
		h.ejections++
		s.epoch++
		s.probation = now.Add(h.cfg.recover)
	case levelDegraded, levelCritical:
		if old == levelHealthy || old == levelUnhealthy {
			s.middleDue = now.Add(h.cfg.maxMiddle)
		}
	}
	h.w.set(ep, h.cfg.weights[l])
	h.watch(ep)
	h.events(Event{Time: now, Endpoint: ep, Kind: EventHealth, Detail: l.String()})
}

// watch keeps ep in watched while it is not healthy or is ramping, and
// notes its next time-based change.
func (h *health) watch(ep int) {
	s := &h.hosts[ep]
	want := s.level != levelHealthy || s.ramping
	i, in := slices.BinarySearch(h.watched, ep)
	switch {
	case want && !in:
		h.watched = slices.Insert(h.watched, i, ep)
	case !want && in:
		h.watched = slices.Delete(h.watched, i, i+1)
	}
	if want {
		h.noteDue(h.due(ep))
	}
}

// due returns when ep, which is watched, has its next time-based change.
func (h *health) due(ep int) time.Time {
	s := &h.hosts[ep]
	switch s.level {
	case levelUnhealthy:
		return s.probation
	case levelDegraded, levelCritical:
		if !s.streak.IsZero() {
			return s.streak.Add(h.cfg.recover) // max_middle waits for the run
		}
		return s.middleDue
	}
	return s.rampStart.Add(h.cfg.ramp)
}

func (h *health) noteDue(t time.Time) {
	if !h.hasDue || t.Before(h.nextDue) {
		h.nextDue, h.hasDue = t, true
	}
}

// updateRamps sets the factors of the ramping hosts for time now.
func (h *health) updateRamps(now time.Time) {
	full := h.cfg.weights[levelHealthy]
	for _, ep := range h.watched {
		s := &h.hosts[ep]
		if !s.ramping {
			continue
		}
		x := min(1, max(0, float64(now.Sub(s.rampStart))/float64(h.cfg.ramp)))
		h.w.set(ep, s.rampFrom+(full-s.rampFrom)*x)
	}
}

// Ejections returns how many times a host has become unhealthy.
func (h *health) Ejections() int { return h.ejections }

// Ejected appends the hosts currently unhealthy, ascending, to dst. A host
// whose probation is due stays listed until the next Pick or Sweep.
func (h *health) Ejected(dst []int) []int {
	for _, ep := range h.watched {
		if h.hosts[ep].level == levelUnhealthy {
			dst = append(dst, ep)
		}
	}
	return dst
}

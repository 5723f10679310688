package strategies

import (
	"math"
	"time"
)

// Reasons of ejections, the Detail of their EventEject events; they name
// Envoy's ejection types.
const (
	ejectReasonConsecutive      = "consecutive-5xx"
	ejectReasonConsecutiveLocal = "consecutive-local-origin"
	ejectReasonSuccessRate      = "success-rate"
	ejectReasonSuccessRateLocal = "success-rate-local-origin"
	ejectReasonFailurePct       = "failure-percentage"
	ejectReasonFailurePctLocal  = "failure-percentage-local-origin"
)

func init() {
	registerWrapper("eject", ejectParams, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		cfg, err := parseEjectConfig(params)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newEjector(inner, env.n, cfg, env.clock, env.events)
		}, nil
	})
}

// ejector is the "eject" wrapper: Envoy's outlier detection. It hides
// ejected endpoints from the inner Picker.
//
// Detectors (each ejection names its detector in the event's Detail):
//   - consecutive (default 5; 0 turns it off, as Envoy's
//     enforcing_consecutive_5xx 0 does): that many failed outcomes in a row
//     (Outcome.Failed: 5xx, transport error or timeout) eject the endpoint at
//     once ("consecutive-5xx"; Envoy's consecutive_5xx, where locally
//     originated errors count as 5xx). Any other outcome resets the count.
//   - split_local (default false), consecutive_local (default 5; 0: off): with
//     split_local=true, local-origin failures (Outcome.LocalOrigin: transport
//     error or timeout) no longer count towards consecutive but towards
//     consecutive_local, reset by any outcome with a response
//     ("consecutive-local-origin"; Envoy's split_external_local_origin_errors
//     and consecutive_local_origin_failure). A 5xx then counts only towards
//     consecutive, and a local-origin failure neither adds to nor resets it.
//   - success_rate (default true, as Envoy enforces it by default),
//     sr_min_hosts (5), sr_volume (100), sr_factor (1.9, Envoy's
//     success_rate_stdev_factor 1900): at each interval, among the
//     non-ejected endpoints with at least sr_volume outcomes in the interval,
//     if there are at least sr_min_hosts of them, those whose success rate is
//     below mean − sr_factor·stdev (population standard deviation) are
//     ejected ("success-rate").
//   - failure_percentage (default false, as in Envoy), fp_threshold (0.85),
//     fp_min_hosts (5), fp_volume (50): at each interval, among the
//     non-ejected endpoints with at least fp_volume outcomes, if there are at
//     least fp_min_hosts of them, those whose failure ratio is at least
//     fp_threshold are ejected ("failure-percentage").
//
// With split_local=true both statistical detectors run twice, as in Envoy:
// on the responses (a 5xx is a failure; outcomes without a response are not
// counted), and on all outcomes with local-origin failures as failures
// ("success-rate-local-origin", "failure-percentage-local-origin").
//
// Timing: interval (default 10s) is the period of the statistical
// detectors and of the multiplier decay below; intervals start at the first
// Pick and run on a fixed grid. Nothing runs in the background: the work of
// the intervals that ended is done at the next Pick, done or Sweep, and each
// detector judges the outcomes counted during the last interval that ended,
// counted when each done ran. An ejection lasts duration (default 30s)
// times the endpoint's ejection multiplier, at most max_duration (default
// 300s, or duration when that is longer; not below duration). The
// multiplier goes up by one at each ejection while multiplier·duration <
// max_duration + duration, and down by one (not below 0) at each interval
// boundary at which the endpoint is not ejected and its latest ejection
// ended at least one interval earlier: with duration 5s, a host ejected
// again and again stays out 5s, 10s, 15s, ..., and once it stays healthy
// its multiplier comes back down one interval at a time. This is Envoy's
// ejection time backoff.
//
// Limits: at most max(1, floor(max·N)) endpoints (max default 0.1, in
// (0, 1]; N = Env.N) are ejected at once, so one endpoint may always be
// ejected, as in Envoy, and with max=1 or N=1 all may be. An ejection over
// the cap does not happen; the consecutive counts restart after reaching
// their threshold either way, as in Envoy. When panic (default 0, off; in
// [0, 1]) is set and the share of non-ejected hosts among the hosts given
// to Pick is below it, Pick ignores ejections and passes the inner Picker
// every given host: Envoy's panic mode (healthy_panic_threshold 50% is
// panic=0.5). Outside panic mode, when every given host is ejected, Pick
// returns NoHost, as Envoy answers "no healthy upstream".
//
// Events: EventEject with the reason as Detail; EventReadmit with an empty
// Detail, at the time of the Pick, done or Sweep that re-admits.
//
// The done that Pick returns is recycled once called, so it must be called
// exactly once, as the Picker contract says (the Balancer ensures it).
//
// Deviations from Envoy:
//   - re-admission is exact: an ejected endpoint is re-admitted at the first
//     Pick, done or Sweep at or after its ejection time is up, not at the
//     next interval boundary, so an ejection lasts its time, not up to one
//     interval more;
//   - outcomes of requests picked before an endpoint's latest ejection or
//     re-admission are ignored, as are outcomes while it is ejected (picked
//     in panic mode); an ejection also clears the endpoint's counts of the
//     current interval. Requests in flight at ejection can therefore not
//     eject it again, or count towards its next ejection;
//   - statistical ejections are made worst first (lowest success rate,
//     highest failure ratio, then lowest id), so that under the cap the
//     worst outliers go; Envoy goes in host-map order;
//   - N for the cap is Env.N, not the current host set, and ejection state
//     outlives SetHosts; the panic share is over the hosts given to Pick,
//     not per priority level;
//   - panic is off by default (Envoy's default threshold is 50%), so a
//     fleet ejected as a whole gets no traffic until re-admissions;
//   - each detector is enforced fully or not at all (Envoy's enforcing_*
//     percentages are 100 or 0); with split_local, failure_percentage=true
//     enforces both Envoy's enforcing_failure_percentage and
//     enforcing_failure_percentage_local_origin; there is no
//     consecutive_gateway_failure (not enforced by default in Envoy) and no
//     ejection jitter (0 by default in Envoy).
type ejector struct {
	// Immutable after construction.
	inner   Picker
	cfg     ejectConfig
	limit   int   // most endpoints ejected at once
	multCap int64 // the multiplier grows only below it
	stats   bool  // a statistical detector is enforced
	buckets int   // outcome counts per endpoint: 1, or 2 with splitLocal
	clock   Clock
	events  func(Event)

	// Mutable; the Balancer's mutex guards everything below.
	state       []ejectState
	nEjected    int       // endpoints currently ejected
	ejections   int       // ejections so far
	nextReadmit time.Time // earliest until among ejected endpoints
	nextTick    time.Time // next interval boundary; zero before the first Pick
	due         time.Time // earliest time at which there is work to do
	scratch     []int     // candidates of the statistical detectors
	rates       []float64
	free        *ejectDone // dones ready for reuse

	// What Pick passes to the inner Picker, derived from the hosts and the
	// ejected set when either changes (stale): the given hosts; avail, the
	// non-ejected ones, when filtered; or nothing (NoHost) when none.
	stale    bool
	filtered bool
	none     bool
	avail    []int
	feed     hostFeed // gives the inner Picker its hosts
}

// ejectState is one endpoint's state in an ejector.
type ejectState struct {
	epoch      uint64    // bumped at each ejection and re-admission
	until      time.Time // re-admission time while ejected
	readmitted time.Time // end of the latest ejection; zero if never ejected
	mult       int64     // ejection time multiplier (Envoy's ejection time backoff)
	fails      int       // consecutive failures towards consecutive
	localFails int       // consecutive local-origin failures, with splitLocal
	ejected    bool
	// counts of the current interval: [0] every outcome (external ones
	// with splitLocal), [1] local-origin view with splitLocal.
	counts [2]ejectCounts
}

// ejectCounts counts outcomes during one interval.
type ejectCounts struct {
	total, failed int64
}

var (
	_ Picker       = (*ejector)(nil)
	_ HostsUpdater = (*ejector)(nil)
	_ Sweeper      = (*ejector)(nil)
)

func newEjector(inner Picker, n int, cfg ejectConfig, clock Clock, events func(Event)) *ejector {
	if clock == nil {
		clock = SystemClock{}
	}
	if events == nil {
		events = func(Event) {}
	}
	e := &ejector{
		inner:   inner,
		cfg:     cfg,
		limit:   ejectionLimit(n, cfg.maxShare),
		multCap: ejectMultiplierCap(cfg.duration, cfg.maxDuration),
		stats:   cfg.successRate || cfg.failurePct,
		buckets: 1,
		clock:   clock,
		events:  events,
		state:   make([]ejectState, n),
		stale:   true,
		feed:    newHostFeed(inner),
	}
	if cfg.splitLocal {
		e.buckets = 2
	}
	return e
}

// ejectionLimit is max(1, floor(maxShare*n)), at most n. The floor allows
// for rounding error in the product, so that 0.29 of 100 is 29.
func ejectionLimit(n int, maxShare float64) int {
	limit := max(1, int(math.Floor(maxShare*float64(n)+1e-9)))
	return min(limit, n)
}

// ejectMultiplierCap is the multiplier beyond which Envoy stops raising it:
// it is raised while multiplier·base < max + base, so its largest value is
// ceil(max/base) + 1.
func ejectMultiplierCap(base, maxDur time.Duration) int64 {
	c := int64(maxDur / base)
	if maxDur%base != 0 {
		c++
	}
	return c + 1
}

// ejectionTime is the ejection time for multiplier mult.
func (e *ejector) ejectionTime(mult int64) time.Duration {
	if mult > int64(e.cfg.maxDuration/e.cfg.duration) {
		return e.cfg.maxDuration
	}
	return e.cfg.duration * time.Duration(mult)
}

// Pick does the time-based work that is due, then lets the inner Picker
// choose among the non-ejected hosts, or among all of hosts in panic mode.
// With none left outside panic mode it returns NoHost, as does an inner
// Picker that allows none.
func (e *ejector) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if now := e.clock.Now(); !now.Before(e.due) {
		if e.nextTick.IsZero() {
			e.nextTick = now.Add(e.cfg.interval)
		}
		e.Sweep(now)
	}
	if e.stale {
		e.refresh(hosts)
	}
	avail := hosts
	switch {
	case e.none:
		return NoHost, noDone
	case e.filtered:
		avail = e.avail
	}
	e.feed.sync(avail)
	ep, done := e.inner.Pick(req, avail)
	if ep == NoHost {
		return NoHost, done
	}
	d := e.free
	if d == nil {
		d = &ejectDone{e: e}
		d.fn = d.finish
	} else {
		e.free = d.next
	}
	d.ep, d.epoch, d.inner = ep, e.state[ep].epoch, done
	return ep, d.fn
}

// ejectDone is the done of one pick. They are recycled through the
// ejector's free list once called, which the contract's "exactly once"
// allows: Pick then allocates nothing in the steady state.
type ejectDone struct {
	e     *ejector
	ep    int
	epoch uint64
	inner func(Outcome)
	fn    func(Outcome) // finish, bound once
	next  *ejectDone    // in the free list
}

func (d *ejectDone) finish(o Outcome) {
	e, ep, epoch, inner := d.e, d.ep, d.epoch, d.inner
	d.inner, d.next, e.free = nil, e.free, d
	inner(o)
	e.observe(ep, epoch, o)
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (e *ejector) UpdateHosts([]int) { e.stale = true }

// refresh derives what Pick passes to the inner Picker from hosts and the
// ejected set: outside panic mode the non-ejected hosts, or NoHost when
// there are none; in panic mode every given host.
func (e *ejector) refresh(hosts []int) {
	e.stale, e.filtered, e.none = false, false, false
	e.feed.changed()
	if e.nEjected == 0 {
		return
	}
	e.avail = e.avail[:0]
	for _, h := range hosts {
		if !e.state[h].ejected {
			e.avail = append(e.avail, h)
		}
	}
	switch {
	case float64(len(e.avail)) < e.cfg.panicShare*float64(len(hosts)):
	case len(e.avail) == 0:
		e.none = true
	default:
		e.filtered = true
	}
}

// Sweep re-admits every endpoint whose ejection ends at or before now, then
// does the work of the interval boundaries at or before now: the
// statistical detectors and the multiplier decay. Intervals start at the
// first Pick, not at a Sweep.
func (e *ejector) Sweep(now time.Time) {
	if e.nEjected > 0 && !now.Before(e.nextReadmit) {
		e.readmit(now)
	}
	if !e.nextTick.IsZero() && !now.Before(e.nextTick) {
		e.tick(now)
	}
	e.updateDue()
}

// updateDue sets due to the earliest time at which Sweep has work.
func (e *ejector) updateDue() {
	e.due = e.nextTick
	if e.nEjected > 0 && e.nextReadmit.Before(e.due) {
		e.due = e.nextReadmit
	}
}

// readmit re-admits the endpoints whose ejection ends at or before now.
func (e *ejector) readmit(now time.Time) {
	var next time.Time
	for ep := range e.state {
		h := &e.state[ep]
		switch {
		case !h.ejected:
		case !now.Before(h.until):
			h.ejected = false
			h.fails, h.localFails = 0, 0
			h.epoch++
			h.readmitted = h.until // for the decay, healthy from then on
			e.nEjected--
			e.stale = true
			e.events(Event{Time: now, Endpoint: ep, Kind: EventReadmit})
		case next.IsZero() || h.until.Before(next):
			next = h.until
		}
	}
	e.nextReadmit = next
}

// tick does the work of the interval boundaries from nextTick up to now:
// the statistical detectors judge the counts of the interval that ended at
// nextTick (every later outcome would have run the tick first, so the later
// intervals are empty) and eject at now; then the multipliers decay by one
// per boundary.
func (e *ejector) tick(now time.Time) {
	first := e.nextTick
	k := int64(now.Sub(first)/e.cfg.interval) + 1
	if e.stats {
		e.detect(now)
		for ep := range e.state {
			e.state[ep].counts = [2]ejectCounts{}
		}
	}
	e.decay(first, k)
	e.nextTick = first.Add(time.Duration(k) * e.cfg.interval)
}

// decay lowers the multiplier of every endpoint that is not ejected by the
// number of the k boundaries first, first+interval, ... at which it had
// been re-admitted for at least an interval.
func (e *ejector) decay(first time.Time, k int64) {
	iv := e.cfg.interval
	for ep := range e.state {
		h := &e.state[ep]
		if h.ejected || h.mult == 0 || h.readmitted.IsZero() {
			continue
		}
		var skip int64 // boundaries before readmitted+interval
		if start := h.readmitted.Add(iv); start.After(first) {
			d := start.Sub(first)
			skip = int64(d / iv)
			if d%iv != 0 {
				skip++
			}
		}
		if n := k - skip; n > 0 {
			h.mult = max(0, h.mult-n)
		}
	}
}

// observe counts the outcome of a request to ep picked in the given epoch.
func (e *ejector) observe(ep int, epoch uint64, o Outcome) {
	if e.stats {
		// The outcome counts in the interval in which it arrives.
		if now := e.clock.Now(); !now.Before(e.due) {
			e.Sweep(now)
		}
	}
	h := &e.state[ep]
	if epoch != h.epoch || h.ejected {
		return
	}
	if !e.cfg.splitLocal {
		e.count(ep, &h.counts[0], &h.fails, o.Failed(), e.cfg.consecutive, ejectReasonConsecutive)
		return
	}
	if o.LocalOrigin() {
		e.count(ep, &h.counts[1], &h.localFails, true, e.cfg.consecutiveLocal, ejectReasonConsecutiveLocal)
		return
	}
	h.counts[1].total++
	h.localFails = 0
	e.count(ep, &h.counts[0], &h.fails, o.Status >= 500, e.cfg.consecutive, ejectReasonConsecutive)
}

// count adds one outcome of ep to an interval count and a run of
// consecutive failures, ejecting ep for reason when the run reaches
// threshold; a success ends the run.
func (e *ejector) count(ep int, c *ejectCounts, run *int, failed bool, threshold int, reason string) {
	c.total++
	if !failed {
		*run = 0
		return
	}
	c.failed++
	if *run++; *run == threshold {
		*run = 0
		e.ejectNow(ep, reason)
	}
}

// ejectNow ejects ep at the clock's time, after the work due by then.
func (e *ejector) ejectNow(ep int, reason string) {
	now := e.clock.Now()
	if !now.Before(e.due) {
		e.Sweep(now)
	}
	e.eject(ep, now, reason)
}

// eject ejects ep at now unless the cap is full.
func (e *ejector) eject(ep int, now time.Time, reason string) {
	if e.nEjected >= e.limit {
		return
	}
	h := &e.state[ep]
	if h.mult < e.multCap {
		h.mult++
	}
	h.ejected = true
	h.until = now.Add(e.ejectionTime(h.mult))
	h.epoch++
	h.fails, h.localFails = 0, 0
	h.counts = [2]ejectCounts{}
	if e.nEjected == 0 || h.until.Before(e.nextReadmit) {
		e.nextReadmit = h.until
	}
	e.nEjected++
	e.ejections++
	e.stale = true
	e.updateDue()
	e.events(Event{Time: now, Endpoint: ep, Kind: EventEject, Detail: reason})
}

// Ejections returns how many ejections there have been.
func (e *ejector) Ejections() int { return e.ejections }

// Ejected appends the ids of the endpoints currently ejected, ascending, to
// dst. An endpoint whose time is up stays listed until the next Pick, done
// or Sweep.
func (e *ejector) Ejected(dst []int) []int {
	for ep := range e.state {
		if e.state[ep].ejected {
			dst = append(dst, ep)
		}
	}
	return dst
}

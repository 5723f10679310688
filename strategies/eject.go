package strategies

import (
	"math"
	"time"
)

// Defaults of the eject wrapper, those of Envoy's outlier detection
// (consecutive_5xx, base_ejection_time, max_ejection_percent).
const (
	DefaultEjectConsecutive = 5
	DefaultEjectDuration    = 30 * time.Second
	DefaultEjectMax         = 0.1
)

func init() {
	registerWrapper("eject", []string{"consecutive", "duration", "max"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		consecutive, err := intParam(params, "consecutive", DefaultEjectConsecutive, 1)
		if err != nil {
			return nil, err
		}
		duration, err := durationParam(params, "duration", DefaultEjectDuration)
		if err != nil {
			return nil, err
		}
		maxShare, err := fractionParam(params, "max", DefaultEjectMax)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newEjector(inner, env.n, consecutive, duration, maxShare, env.clock, env.events)
		}, nil
	})
}

// ejector is the "eject" wrapper: outlier ejection on consecutive failures,
// after Envoy's consecutive_5xx detection, which acts as soon as the
// threshold is reached.
//
// Parameters: consecutive (default 5, >= 1) failed outcomes in a row
// (Outcome.Failed: 5xx, transport error or timeout) eject an endpoint for
// duration (default 30s); a success resets its count. At most
// min(max(1, floor(max*N)), N-1) endpoints are ejected at once (max default
// 0.1, in (0, 1]): one may always be ejected, as in Envoy, but never all, so
// a pick always has a host; with N = 1 nothing is ever ejected. Ejected
// endpoints are hidden from the inner Picker.
//
// An ejected endpoint is re-admitted with a fresh count once duration has
// passed, checked at the first Pick at or after that time, or by Sweep; if it
// keeps failing it is ejected again after consecutive more failures. An
// endpoint whose threshold is reached while the cap is full stays at the
// threshold and is ejected at its next failure after room frees up.
//
// Deviations from Envoy:
//   - the ejection time is fixed; Envoy multiplies base_ejection_time by the
//     number of times the host was ejected, up to max_ejection_time (300s);
//   - re-admission is checked on every Pick rather than at each interval
//     (10s), so an ejection lasts duration, not up to duration+interval;
//   - outcomes of requests picked before an endpoint's latest ejection or
//     re-admission are ignored, so requests still in flight at ejection
//     cannot eject it again or count towards its next ejection;
//   - there is no panic threshold; the cap below N plays its part.
type ejector struct {
	// Immutable after construction.
	inner       Picker
	consecutive int
	duration    time.Duration
	limit       int // most endpoints ejected at once
	clock       Clock
	events      func(Event)

	// Mutable; the Balancer's mutex guards everything below.
	failures    []int       // consecutive failures since the last success or re-admission
	epoch       []uint64    // bumped at each ejection and re-admission of the endpoint
	ejected     []bool      // currently ejected
	until       []time.Time // re-admission time of ejected endpoints
	nEjected    int         // endpoints currently ejected
	ejections   int         // ejections so far
	nextReadmit time.Time   // earliest until among ejected endpoints

	// avail caches the non-ejected hosts of the input identified by
	// (srcData, srcLen); stale marks it out of date after a change of the
	// ejected set. A rebuild allocates a new slice so that an inner wrapper
	// caching on slice identity sees the change.
	avail   []int
	srcData *int
	srcLen  int
	stale   bool
}

var (
	_ Picker  = (*ejector)(nil)
	_ Sweeper = (*ejector)(nil)
)

func newEjector(inner Picker, n, consecutive int, duration time.Duration, maxShare float64, clock Clock, events func(Event)) *ejector {
	if clock == nil {
		clock = SystemClock{}
	}
	if events == nil {
		events = func(Event) {}
	}
	return &ejector{
		inner:       inner,
		consecutive: consecutive,
		duration:    duration,
		limit:       ejectionLimit(n, maxShare),
		clock:       clock,
		events:      events,
		failures:    make([]int, n),
		epoch:       make([]uint64, n),
		ejected:     make([]bool, n),
		until:       make([]time.Time, n),
	}
}

// ejectionLimit is min(max(1, floor(maxShare*n)), n-1). The floor allows for
// rounding error in the product, so that 0.29 of 100 is 29.
func ejectionLimit(n int, maxShare float64) int {
	limit := max(1, int(math.Floor(maxShare*float64(n)+1e-9)))
	return max(0, min(limit, n-1))
}

// Pick re-admits endpoints whose ejection has expired, then lets the inner
// Picker choose among the non-ejected hosts. Should every given host be
// ejected (a caller passing a subset), it passes them all.
func (e *ejector) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if e.nEjected > 0 {
		e.Sweep(e.clock.Now())
	}
	avail := hosts
	if e.nEjected > 0 {
		if avail = e.available(hosts); len(avail) == 0 {
			avail = hosts
		}
	}
	ep, done := e.inner.Pick(req, avail)
	epoch := e.epoch[ep]
	return ep, func(o Outcome) {
		done(o)
		e.observe(ep, epoch, o)
	}
}

func (e *ejector) available(hosts []int) []int {
	if e.stale || &hosts[0] != e.srcData || len(hosts) != e.srcLen {
		avail := make([]int, 0, len(hosts))
		for _, h := range hosts {
			if !e.ejected[h] {
				avail = append(avail, h)
			}
		}
		e.avail, e.srcData, e.srcLen, e.stale = avail, &hosts[0], len(hosts), false
	}
	return e.avail
}

// Sweep re-admits every endpoint whose ejection ends at or before now.
func (e *ejector) Sweep(now time.Time) {
	if e.nEjected == 0 || now.Before(e.nextReadmit) {
		return
	}
	var next time.Time
	for ep, ejected := range e.ejected {
		switch {
		case !ejected:
		case !now.Before(e.until[ep]):
			e.ejected[ep] = false
			e.failures[ep] = 0
			e.epoch[ep]++
			e.nEjected--
			e.stale = true
			e.events(Event{Time: now, Endpoint: ep, Kind: EventReadmit})
		case next.IsZero() || e.until[ep].Before(next):
			next = e.until[ep]
		}
	}
	e.nextReadmit = next
}

// observe counts the outcome of a request to ep picked in the given epoch.
func (e *ejector) observe(ep int, epoch uint64, o Outcome) {
	if epoch != e.epoch[ep] || e.ejected[ep] {
		return
	}
	if !o.Failed() {
		e.failures[ep] = 0
		return
	}
	e.failures[ep]++
	if e.failures[ep] < e.consecutive {
		return
	}
	now := e.clock.Now()
	e.Sweep(now)
	if e.nEjected >= e.limit {
		return
	}
	until := now.Add(e.duration)
	e.ejected[ep] = true
	e.until[ep] = until
	e.epoch[ep]++
	if e.nEjected == 0 || until.Before(e.nextReadmit) {
		e.nextReadmit = until
	}
	e.nEjected++
	e.ejections++
	e.stale = true
	e.events(Event{Time: now, Endpoint: ep, Kind: EventEject})
}

// Ejections returns how many ejections there have been.
func (e *ejector) Ejections() int { return e.ejections }

// Ejected appends the ids of the endpoints currently ejected, ascending, to
// dst. An endpoint whose time is up stays listed until the next Pick or Sweep.
func (e *ejector) Ejected(dst []int) []int {
	for ep, ejected := range e.ejected {
		if ejected {
			dst = append(dst, ep)
		}
	}
	return dst
}

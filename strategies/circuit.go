package strategies

import (
	"errors"
	"time"
)

// DefaultCircuitDuration is how long the circuit wrapper keeps an endpoint
// out after its in-flight count reached the limit.
const DefaultCircuitDuration = 30 * time.Second

// circuitReason is the Detail of the circuit wrapper's EventEject events.
const circuitReason = "max-inflight"

func init() {
	registerWrapper("circuit", []string{"max_inflight", "duration"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		if _, ok := params["max_inflight"]; !ok {
			return nil, errors.New("max_inflight: required, want an integer >= 1 (the most requests in flight to one endpoint)")
		}
		limit, err := intParam(params, "max_inflight", 0, 1)
		if err != nil {
			return nil, err
		}
		duration, err := durationParam(params, "duration", DefaultCircuitDuration)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newCircuit(inner, env, int64(limit), duration)
		}, nil
	})
}

// circuit is the "circuit" wrapper: a connection-count circuit breaker
// around any inner Picker, the "round robin with a connection-count
// breaker" of the article on thirteen load-balancing algorithms, which
// rescued a live-streaming service whose slow instances piled up
// connections under round robin.
//
// Parameters: max_inflight (required, >= 1), the most requests this
// Balancer keeps in flight to one endpoint; duration (default 30s), how
// long an endpoint stays out once it reached that.
//
// The count is the Balancer's own in-flight count (picked, done not yet
// called). When the inner Picker chooses an endpoint that this pick brings
// to max_inflight requests in flight, the request still goes there, and the
// circuit opens: the endpoint is hidden from the inner Picker for duration,
// then re-admitted at the first Pick or Sweep at or after that time if its
// count is below the limit by then; if not, it stays out for another
// duration (the same opening: no event, not counted again). There is no
// half-open probing: a re-admitted endpoint takes its share at once, and
// reopens when it reaches the limit again. So an endpoint never holds more
// than max_inflight requests from this Balancer unless every given host
// holds as many (the fallback below). Opening is decided at the pick, so the
// circuit must be the Picker whose choice the Balancer counts: nothing
// outside it may drop or replace the endpoint it returns (eject, health and
// slowstart wrappers pass their inner Picker's choice through and may go on
// either side).
//
// All open: when every given host is out, the circuit passes the inner
// Picker those of them with fewer than max_inflight requests in flight at
// that pick, timers ignored, and opens no circuit: a pure in-flight cap
// until the first circuit closes. When none is below the limit it passes
// every given host, as Envoy's panic mode ignores health, rather than
// failing with NoHost: the circuit opens on a load signal, not a failure,
// and with NoHost a burst that briefly filled every endpoint (a client's
// first requests while its connections are dialled) would fail all traffic
// for the whole duration while the instances answer. Without the cap a burst
// that opened every circuit at once would hand the slow instance its full
// round-robin share for a duration, and its queue could keep every count
// above the limit (through the client's shared connections and workers) at
// each re-admission.
//
// Counting: each opening is an ejection (Balancer.Ejections, the summary's
// "ejections"), recorded as an EventEject event with Detail "max-inflight";
// each re-admission as an EventReadmit event, as the eject wrapper does, and
// Balancer.Ejected lists the endpoints out.
//
// Departures from the article: it describes a breaker on the connections a
// server holds (from all clients), checked by the balancer or the server;
// here the count is this Balancer's requests in flight, since a client sees
// no other client's requests, so several replicas each allow max_inflight.
// The article's breaker closes when the connections drain; this one stays
// open for a fixed duration, as the spec names it, like Envoy's ejection
// time, without backoff. State is kept by endpoint id and outlives SetHosts.
type circuit struct {
	// Immutable after construction.
	inner    Picker
	limit    int64
	duration time.Duration
	clock    Clock
	events   func(Event)
	inflight []int64 // by endpoint id; maintained by the Balancer

	// Mutable; the Balancer's mutex guards everything below.
	until     []time.Time // by endpoint id: end of its open circuit; zero while closed
	nOpen     int         // endpoints out
	trips     int         // circuits opened so far
	nextClose time.Time   // earliest until among the endpoints out

	// What Pick passes to the inner Picker, derived from the hosts and the
	// open set when either changes (stale): the given hosts, or avail, those
	// with a closed circuit, when filtered. allOut: every given host is
	// out, and each pick passes those below the limit (under, rebuilt per
	// pick), or all when none is.
	stale    bool
	filtered bool
	allOut   bool
	avail    []int
	under    []int
	feed     hostFeed
}

var (
	_ Picker       = (*circuit)(nil)
	_ HostsUpdater = (*circuit)(nil)
	_ Sweeper      = (*circuit)(nil)
	_ ejecting     = (*circuit)(nil)
)

func newCircuit(inner Picker, env *buildEnv, limit int64, duration time.Duration) *circuit {
	return &circuit{
		inner:    inner,
		limit:    limit,
		duration: duration,
		clock:    env.clock,
		events:   env.events,
		inflight: env.inflight,
		until:    make([]time.Time, env.n),
		stale:    true,
		feed:     newHostFeed(inner),
	}
}

// Pick re-admits the endpoints whose time is up, lets the inner Picker
// choose among the hosts with a closed circuit (every given host when there
// are none) and opens the chosen endpoint's circuit when this pick brings
// it to the limit.
func (c *circuit) Pick(req Request, hosts []int) (int, func(Outcome)) {
	now := c.clock.Now()
	if c.nOpen > 0 && !now.Before(c.nextClose) {
		c.Sweep(now)
	}
	if c.stale {
		c.refresh(hosts)
	}
	avail := hosts
	switch {
	case c.filtered:
		avail = c.avail
	case c.allOut:
		avail = c.belowLimit(hosts)
		c.feed.changed()
	}
	c.feed.sync(avail)
	ep, done := c.inner.Pick(req, avail)
	if ep != NoHost && c.until[ep].IsZero() && c.inflight[ep]+1 >= c.limit {
		c.open(ep, now)
	}
	return ep, done
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (c *circuit) UpdateHosts([]int) { c.stale = true }

// refresh derives what Pick passes to the inner Picker: the hosts with a
// closed circuit, or all of hosts when none or all are closed.
func (c *circuit) refresh(hosts []int) {
	c.stale, c.filtered, c.allOut = false, false, false
	c.feed.changed()
	if c.nOpen == 0 {
		return
	}
	c.avail = c.avail[:0]
	for _, h := range hosts {
		if c.until[h].IsZero() {
			c.avail = append(c.avail, h)
		}
	}
	c.filtered = len(c.avail) > 0 && len(c.avail) < len(hosts)
	c.allOut = len(c.avail) == 0
}

// belowLimit returns the hosts with fewer requests in flight than the
// limit, or hosts when there are none.
func (c *circuit) belowLimit(hosts []int) []int {
	c.under = c.under[:0]
	for _, h := range hosts {
		if c.inflight[h] < c.limit {
			c.under = append(c.under, h)
		}
	}
	if len(c.under) == 0 {
		return hosts
	}
	return c.under
}

// open takes ep out until now+duration.
func (c *circuit) open(ep int, now time.Time) {
	until := now.Add(c.duration)
	c.until[ep] = until
	if c.nOpen == 0 || until.Before(c.nextClose) {
		c.nextClose = until
	}
	c.nOpen++
	c.trips++
	c.stale = true
	c.events(Event{Time: now, Endpoint: ep, Kind: EventEject, Detail: circuitReason})
}

// Sweep re-admits every endpoint whose time out ends at or before now and
// whose count is below the limit; the others stay out another duration.
func (c *circuit) Sweep(now time.Time) {
	if c.nOpen == 0 || now.Before(c.nextClose) {
		return
	}
	var next time.Time
	for ep, until := range c.until {
		switch {
		case until.IsZero():
		case !now.Before(until) && c.inflight[ep] >= c.limit:
			// Still at the limit: out for another duration.
			until = now.Add(c.duration)
			c.until[ep] = until
			if next.IsZero() || until.Before(next) {
				next = until
			}
		case !now.Before(until):
			c.until[ep] = time.Time{}
			c.nOpen--
			c.stale = true
			c.events(Event{Time: now, Endpoint: ep, Kind: EventReadmit})
		case next.IsZero() || until.Before(next):
			next = until
		}
	}
	c.nextClose = next
}

// Ejections returns how many times a circuit opened.
func (c *circuit) Ejections() int { return c.trips }

// Ejected appends the endpoints out, ascending, to dst.
func (c *circuit) Ejected(dst []int) []int {
	for ep, until := range c.until {
		if !until.IsZero() {
			dst = append(dst, ep)
		}
	}
	return dst
}

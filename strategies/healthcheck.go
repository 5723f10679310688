package strategies

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of the healthcheck wrapper, those of HAProxy's server checks
// (inter 2s, rise 2, fall 3); the timeout is shorter than HAProxy's, which
// defaults to inter.
const (
	DefaultHealthcheckInterval = 2 * time.Second
	DefaultHealthcheckTimeout  = time.Second
	DefaultHealthcheckRise     = 2
	DefaultHealthcheckFall     = 3
	DefaultHealthcheckPath     = "/healthz"
)

func init() {
	registerWrapper("healthcheck", []string{"interval", "timeout", "rise", "fall", "path"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		interval, err := durationParam(params, "interval", DefaultHealthcheckInterval)
		if err != nil {
			return nil, err
		}
		timeout, err := durationParam(params, "timeout", DefaultHealthcheckTimeout)
		if err != nil {
			return nil, err
		}
		if timeout > interval {
			return nil, fmt.Errorf("timeout: want a duration no longer than interval (%v), got %q", interval, params["timeout"])
		}
		rise, err := intParam(params, "rise", DefaultHealthcheckRise, 1)
		if err != nil {
			return nil, err
		}
		fall, err := intParam(params, "fall", DefaultHealthcheckFall, 1)
		if err != nil {
			return nil, err
		}
		path := DefaultHealthcheckPath
		if v, ok := params["path"]; ok {
			if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \t?#") {
				return nil, fmt.Errorf("path: want an absolute URL path like \"/healthz\", got %q", v)
			}
			path = v
		}
		cfg := ProbeConfig{Interval: interval, Timeout: timeout, Path: path}
		return func(inner Picker, env *buildEnv) Picker {
			return newHealthcheck(inner, env.n, cfg, rise, fall, env.events)
		}, nil
	})
}

// healthcheck is the "healthcheck" wrapper: active health checking, as
// HAProxy's "check" on a server. The Balancer's runner probes every endpoint
// (see Prober): every interval (default 2s) it requests path (default
// "/healthz") with timeout (default 1s, at most interval) and reports the
// result through Balancer.ReportProbe. Endpoints start up; an endpoint is
// marked down after fall (default 3, >= 1) failed probes in a row and up
// again after rise (default 2, >= 1) good probes in a row. Down endpoints
// are hidden from the inner Picker; should every given host be down, all are
// passed. Each change is an EventProbe event with Detail "down" or "up".
//
// An active check answers "is it alive?", not "does it serve real requests
// well?". It catches instances that crash, hang or refuse connections, but
// it misses a slow instance, whose tiny /healthz still answers 200 in time,
// and a fast-failing one, whose errors are on code paths the probe does not
// touch: both keep their full share of traffic here. Pair it with passive
// observation (eject, health) for those.
//
// Deviations from HAProxy: its check counter is a saturating health level
// (a success raises it, a failure lowers it) rather than strict runs, so
// interleaved results there can still mark a server down; and its default
// init-state "up" lets the very first failed check mark a new server down,
// where here endpoints start fully up and need fall failures (HAProxy's
// "fully-up"). There is no fastinter/downinter: the runner probes at one
// interval.
type healthcheck struct {
	// Immutable after construction.
	inner  Picker
	cfg    ProbeConfig
	rise   int
	fall   int
	events func(Event)

	// Mutable; the Balancer's mutex guards everything below.
	down      []bool
	good      []int // consecutive good probes of a down endpoint
	bad       []int // consecutive failed probes of an up endpoint
	nDown     int
	ejections int

	// What Pick passes to the inner Picker, derived from the hosts and the
	// down set when either changes (stale): avail, the up hosts, when
	// filtered, otherwise every given host.
	stale    bool
	filtered bool
	avail    []int
	feed     hostFeed // gives the inner Picker its hosts
}

var (
	_ Picker       = (*healthcheck)(nil)
	_ HostsUpdater = (*healthcheck)(nil)
	_ Prober       = (*healthcheck)(nil)
	_ ejecting     = (*healthcheck)(nil)
)

func newHealthcheck(inner Picker, n int, cfg ProbeConfig, rise, fall int, events func(Event)) *healthcheck {
	if events == nil {
		events = func(Event) {}
	}
	return &healthcheck{
		inner:  inner,
		cfg:    cfg,
		rise:   rise,
		fall:   fall,
		events: events,
		down:   make([]bool, n),
		good:   make([]int, n),
		bad:    make([]int, n),
		stale:  true,
		feed:   newHostFeed(inner),
	}
}

// ProbeConfig returns how endpoints are to be probed.
func (c *healthcheck) ProbeConfig() ProbeConfig { return c.cfg }

// ProbeResult records one probe of endpoint.
func (c *healthcheck) ProbeResult(endpoint int, healthy bool, now time.Time) {
	if endpoint < 0 || endpoint >= len(c.down) {
		return
	}
	switch {
	case healthy && c.down[endpoint]:
		c.good[endpoint]++
		if c.good[endpoint] >= c.rise {
			c.down[endpoint] = false
			c.good[endpoint] = 0
			c.nDown--
			c.stale = true
			c.events(Event{Time: now, Endpoint: endpoint, Kind: EventProbe, Detail: "up"})
		}
	case healthy:
		c.bad[endpoint] = 0
	case c.down[endpoint]:
		c.good[endpoint] = 0
	default:
		c.bad[endpoint]++
		if c.bad[endpoint] >= c.fall {
			c.down[endpoint] = true
			c.bad[endpoint] = 0
			c.nDown++
			c.ejections++
			c.stale = true
			c.events(Event{Time: now, Endpoint: endpoint, Kind: EventProbe, Detail: "down"})
		}
	}
}

// Pick lets the inner Picker choose among the hosts that are up.
func (c *healthcheck) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if c.stale {
		c.refresh(hosts)
	}
	avail := hosts
	if c.filtered {
		avail = c.avail
	}
	c.feed.sync(avail)
	return c.inner.Pick(req, avail)
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (c *healthcheck) UpdateHosts([]int) { c.stale = true }

// refresh derives what Pick passes to the inner Picker from hosts and the
// down set: the hosts that are up, or every given host when none is.
func (c *healthcheck) refresh(hosts []int) {
	c.stale, c.filtered = false, false
	c.feed.changed()
	if c.nDown == 0 {
		return
	}
	c.avail = c.avail[:0]
	for _, h := range hosts {
		if !c.down[h] {
			c.avail = append(c.avail, h)
		}
	}
	c.filtered = len(c.avail) > 0
}

// Ejections returns how many times an endpoint has been marked down.
func (c *healthcheck) Ejections() int { return c.ejections }

// Ejected appends the endpoints currently down, ascending, to dst.
func (c *healthcheck) Ejected(dst []int) []int {
	for ep, down := range c.down {
		if down {
			dst = append(dst, ep)
		}
	}
	return dst
}

package strategies

import "time"

func init() {
	registerWrapper("pinned", []string{"max_age"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		maxAge, err := durationParam(params, "max_age", 0)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newPinned(inner, env.n, env.conns, maxAge, env.clock)
		}, nil
	})
}

// Conn names the pinned connection a request goes on (Balancer.PickConn).
type Conn struct {
	Slot int // which of the client's connections, 0..Env.Connections-1; -1: none pinned
	// Opened counts the connections opened in Slot so far, this one
	// included: it grows when the slot's connection is recycled, so a
	// caller holding real sockets knows to dial a new one.
	Opened uint64
}

// connPinner is implemented by Pickers that pin connections: takeConn
// returns the connection of the latest Pick, once (ok is false when no
// Pick set one since the last call).
type connPinner interface {
	takeConn() (Conn, bool)
}

// pinned is the "pinned" wrapper: the client-side equivalent of
// connection-level (L4) balancing, as a Kubernetes Service (kube-proxy) or
// an L4 proxy balances an HTTP/2 or gRPC client's long-lived connections.
//
// The client holds Env.Connections connections (DefaultConnections, 1,
// when 0). Each is pinned to the endpoint the inner Picker picks when the
// connection opens, and every request goes to the next connection in turn,
// as an HTTP/2 client spreads its streams over its connections: the inner
// strategy chooses per connection, not per request. A connection opens at
// its first request; with max_age it is recycled at its next request once
// it is that old (its endpoint picked anew, so instances that joined since
// can get traffic), as grpc-go servers' MaxConnectionAge makes clients
// reconnect; without max_age it is never recycled. A connection whose
// endpoint is no longer among the hosts given to Pick — it left the host
// set, or a wrapper outside this one ejected it (write "+pinned+eject") —
// is re-picked at its next request, as a client reconnects when its
// connection breaks. An ejection inside this wrapper ("+eject+pinned")
// only affects connections opened afterwards.
//
// The inner Picker hears of the request that opens a connection: it gets
// that request's outcome through its done, and nothing of the requests
// that reuse the connection, as an L4 balancer sees connections and not
// requests. The Balancer's in-flight counters still count every request,
// so "least-inflight+pinned" opens a connection to the endpoint with the
// fewest requests in flight.
//
// Connections here are slots; in the real engine with protocol h2c each is
// a real HTTP/2 connection (Balancer.PickConn names the slot), with
// HTTP/1.1 the instance is pinned, not a socket.
type pinned struct {
	// Immutable after construction.
	inner  Picker
	maxAge time.Duration // 0: never recycle
	clock  Clock

	// Mutable; the Balancer's mutex guards everything below.
	feed    hostFeed
	conns   []pinnedConn
	next    int    // the slot of the next request
	present []bool // whether each endpoint is among the latest hosts
	last    Conn   // the connection of the latest Pick
	fresh   bool   // last is set and not yet taken
}

type pinnedConn struct {
	endpoint int
	openedAt time.Time
	opened   uint64 // connections opened in this slot; 0: none yet
	open     bool
}

var (
	_ HostsUpdater = (*pinned)(nil)
	_ connPinner   = (*pinned)(nil)
)

func newPinned(inner Picker, n, conns int, maxAge time.Duration, clock Clock) *pinned {
	return &pinned{
		inner:   inner,
		maxAge:  maxAge,
		clock:   clock,
		feed:    newHostFeed(inner),
		conns:   make([]pinnedConn, conns),
		present: make([]bool, n),
	}
}

// UpdateHosts implements HostsUpdater.
func (p *pinned) UpdateHosts(hosts []int) {
	clear(p.present)
	for _, h := range hosts {
		p.present[h] = true
	}
	p.feed.changed()
}

// Pick implements Picker.
func (p *pinned) Pick(req Request, hosts []int) (int, func(Outcome)) {
	k := p.next
	p.next = (p.next + 1) % len(p.conns)
	c := &p.conns[k]
	if c.open && p.present[c.endpoint] && (p.maxAge <= 0 || p.clock.Now().Sub(c.openedAt) < p.maxAge) {
		p.last, p.fresh = Conn{Slot: k, Opened: c.opened}, true
		return c.endpoint, noDone
	}
	p.feed.sync(hosts)
	ep, done := p.inner.Pick(req, hosts)
	if ep == NoHost {
		c.open, p.fresh = false, false
		return NoHost, done
	}
	c.endpoint, c.openedAt, c.open = ep, p.clock.Now(), true
	c.opened++
	p.last, p.fresh = Conn{Slot: k, Opened: c.opened}, true
	return ep, done
}

func (p *pinned) takeConn() (Conn, bool) {
	c, ok := p.last, p.fresh
	p.fresh = false
	return c, ok
}

package transport

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// Option configures a Client or a proxy client beyond its defaults.
type Option func(*config)

type config struct {
	h2cConns int  // > 0: speak h2c over this many connections (see H2C)
	noReuse  bool // a fresh connection per request (see NoKeepAlive)
	zones    *Zones
}

// NoKeepAlive makes the client open a new HTTP/1.1 connection for every
// request and close it after the answer: a connection-level balancer in
// the way (a Kubernetes Service) then chooses per request.
func NoKeepAlive() Option { return func(c *config) { c.noReuse = true } }

// H2C makes the client speak HTTP/2 over cleartext with prior knowledge
// (the instances' and the sidecars' one port takes it) over a fixed number
// of connections, conns (at least 1), multiplexing requests onto them as
// streams:
//   - built-in strategies: each balancer replica holds conns connections
//     to every instance, as a client-side L7 balancer keeps a pool per
//     backend, and sends each request to its instance's next connection
//     in turn. R replicas and N instances: R×N×conns connections.
//   - a proxy under test (NewProxyClient): conns connections to the proxy,
//     each request on the next one in turn, so an L4 proxy balances
//     exactly conns connections.
//   - a strategy that pins connections (the pinned wrapper): the replica's
//     conns connections are its pinned connections (give the strategy
//     the same number, strategies.Env.Connections), each a real socket to
//     the instance it is pinned to; when the strategy recycles one, the
//     next request dials a new socket and the old one closes once its
//     streams have ended.
//
// Each connection is an http.ClientConn: dialed at its first request,
// dialed again once broken (a reset connection, a killed instance), never
// more than one at a time. A connection at the server's stream limit
// (SETTINGS_MAX_CONCURRENT_STREAMS) makes further requests wait for a
// stream rather than open another connection. maxConns of NewClient does
// not apply. Without H2C the client speaks HTTP/1.1 with keep-alive pools.
func H2C(conns int) Option {
	return func(c *config) { c.h2cConns = max(1, conns) }
}

// h2cPool holds the h2c connections, each an http.ClientConn: exactly one
// socket, dialed at its slot's first request and again after it broke.
type h2cPool struct {
	// Immutable after construction.
	conns     int
	instances int               // rows of slots per replica: instances, or 1 for a proxy
	slots     [][]h2cSlot       // [replica][row*conns+k]
	next      [][]atomic.Uint64 // [replica][row]: the next slot in turn
	tr        *http.Transport   // dials the connections; holds none itself
	pins      [][]h2cSlot       // [replica][slot]: the connections a pinning strategy names
	retiring  sync.WaitGroup    // retired connections not yet closed
	stop      chan struct{}     // closed by closeIdle: close retired connections at once
	stopOnce  sync.Once
}

// retireDelay is how long a recycled connection takes new streams from
// requests picked just before it was recycled, before it closes once idle.
const retireDelay = 100 * time.Millisecond

func newH2CPool(replicas, instances, conns int) *h2cPool {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	p := &h2cPool{
		conns:     conns,
		instances: instances,
		slots:     make([][]h2cSlot, replicas),
		next:      make([][]atomic.Uint64, replicas),
		pins:      make([][]h2cSlot, replicas),
		tr: &http.Transport{
			Proxy:              nil,
			DialContext:        dialRecorded(&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}),
			Protocols:          &protos,
			DisableCompression: true,
		},
		stop: make(chan struct{}),
	}
	for r := range replicas {
		p.slots[r] = make([]h2cSlot, instances*conns)
		p.next[r] = make([]atomic.Uint64, instances)
		p.pins[r] = make([]h2cSlot, conns)
		for k := range p.slots[r] {
			p.slots[r][k].pool = p
		}
		for k := range p.pins[r] {
			p.pins[r][k].pool = p
		}
	}
	return p
}

// h2cSlot is one connection of the pool.
type h2cSlot struct {
	pool *h2cPool

	mu     sync.Mutex
	cc     *http.ClientConn // guarded by mu; nil until dialed
	nc     net.Conn         // guarded by mu; cc's socket
	addr   string           // guarded by mu; cc's address
	opened uint64           // guarded by mu; the pinned connection's number (Conn.Opened)
	prev   *http.ClientConn // guarded by mu; the connection before the latest recycling
	pnc    net.Conn         // guarded by mu; prev's socket
	paddr  string           // guarded by mu; prev's address
}

// conn returns the slot's connection to addr, the opened-th the strategy
// opened in it (0: not pinned): a new one when the slot has none, its
// connection broke, goes to another address, or the strategy recycled it.
// A request picked before the latest recycling (opened older than the
// slot's) goes on the connection it was picked for, as long as that is
// open, else on a connection of its own.
func (s *h2cSlot) conn(ctx context.Context, addr string, opened uint64) (*http.ClientConn, net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if opened < s.opened {
		if s.prev != nil && s.paddr == addr && s.prev.Err() == nil {
			return s.prev, s.pnc, nil
		}
		cc, nc, err := s.pool.dial(ctx, addr)
		if err == nil {
			s.pool.retire(cc)
		}
		return cc, nc, err
	}
	if s.cc != nil && (s.addr != addr || opened > s.opened || s.cc.Err() != nil) {
		s.pool.retire(s.cc)
		s.prev, s.pnc, s.paddr, s.cc, s.nc = s.cc, s.nc, s.addr, nil, nil
	}
	s.opened = opened
	if s.cc == nil {
		cc, nc, err := s.pool.dial(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		s.cc, s.nc, s.addr = cc, nc, addr
	}
	return s.cc, s.nc, nil
}

// dial opens a connection to addr and returns it with its socket; the
// request's cancellation stops the dial but not the connection.
func (p *h2cPool) dial(ctx context.Context, addr string) (*http.ClientConn, net.Conn, error) {
	var nc net.Conn
	cc, err := p.tr.NewClientConn(context.WithValue(context.WithoutCancel(ctx), dialedKey{}, &nc), "http", addr)
	return cc, nc, err
}

// dialedKey is a context key: a *net.Conn under it receives the socket
// dialRecorded dials.
type dialedKey struct{}

// dialRecorded dials with d and stores the socket where the context's
// dialedKey points.
func dialRecorded(d *net.Dialer) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if p, ok := ctx.Value(dialedKey{}).(*net.Conn); ok && err == nil {
			*p = c
		}
		return c, err
	}
}

// retire closes cc once it has had no stream for retireDelay, as a
// server's MaxConnectionAge drains a connection: its streams end
// normally, new ones go elsewhere. closeIdle closes it at once.
func (p *h2cPool) retire(cc *http.ClientConn) {
	p.retiring.Add(1)
	go func() {
		defer p.retiring.Done()
		defer cc.Close()
		idle := make(chan struct{}, 1)
		cc.SetStateHook(func(cc *http.ClientConn) {
			if cc.InFlight() == 0 {
				select {
				case idle <- struct{}{}:
				default:
				}
			}
		})
		defer cc.SetStateHook(nil)
		timer := time.NewTimer(retireDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-p.stop:
			return
		}
		for cc.InFlight() > 0 && cc.Err() == nil {
			select {
			case <-idle:
			case <-p.stop:
				return
			}
		}
	}()
}

// roundTrip sends req on replica's next connection to instance row (0
// for a proxy) at addr, or on pinned connection slot when conn names one.
func (p *h2cPool) roundTrip(req *http.Request, replica, row int, conn strategies.Conn) (*http.Response, error) {
	var s *h2cSlot
	if conn.Slot >= 0 {
		s = &p.pins[replica][conn.Slot%p.conns]
	} else {
		n := p.next[replica][row].Add(1) - 1
		s = &p.slots[replica][row*p.conns+int(n%uint64(p.conns))]
	}
	cc, nc, err := s.conn(req.Context(), req.URL.Host, conn.Opened)
	if err != nil {
		return nil, err
	}
	// A ClientConn reports no connection to the request's trace, as a
	// Transport does; the proxy client's attribution needs it.
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.GotConn != nil && nc != nil {
		tr.GotConn(httptrace.GotConnInfo{Conn: nc, Reused: true})
	}
	return cc.RoundTrip(req)
}

// closeIdle closes every connection: the Client's requests have ended.
func (p *h2cPool) closeIdle() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.retiring.Wait()
	for _, slots := range [][][]h2cSlot{p.slots, p.pins} {
		for r := range slots {
			for k := range slots[r] {
				s := &slots[r][k]
				s.mu.Lock()
				if s.cc != nil {
					_ = s.cc.Close()
					s.cc = nil
				}
				s.mu.Unlock()
			}
		}
	}
}

// configure applies opts to a new Client.
func (b *Client) configure(opts []Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.noReuse {
		b.base.DisableKeepAlives = true
	}
	if c.zones != nil && b.proxy == nil && c.h2cConns == 0 {
		b.zones = c.zones
		b.clients = make([]atomic.Pointer[instClient], len(b.targets)*max(1, c.zones.zones))
	}
	if c.h2cConns == 0 {
		return
	}
	b.connCap = 0 // the connections are fixed; requests wait for a stream, not a connection
	b.slots = nil
	if b.proxy != nil {
		b.h2c = newH2CPool(1, 1, c.h2cConns)
		return
	}
	b.h2c = newH2CPool(max(1, len(b.lbs)), len(b.targets), c.h2cConns)
}

// roundTrip sends req, replica's to instance ep (-1: the proxy) on conn,
// over HTTP/1.1 or the h2c connections. To an instance, HTTP/1.1 goes
// through its upstream.Client rather than net/http's Transport,
// which hands every request to a writer goroutine and every answer back
// from a reader goroutine: two more goroutine switches per request, each
// waiting for a free processor on a busy machine (BenchmarkPeer).
func (b *Client) roundTrip(req *http.Request, replica, ep int, conn strategies.Conn) (*http.Response, error) {
	switch {
	case b.h2c == nil && b.proxy == nil && b.zones != nil:
		return b.zoneRoundTrip(req, replica, ep)
	case b.h2c == nil && b.proxy == nil:
		return b.client(ep, req.URL.Host).RoundTrip(req)
	case b.h2c == nil:
		return b.base.RoundTrip(req)
	case b.proxy != nil:
		return b.h2c.roundTrip(req, 0, 0, strategies.Conn{Slot: -1})
	default:
		return b.h2c.roundTrip(req, replica, ep, conn)
	}
}

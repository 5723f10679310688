// Package transport is the load generator's client, the balancing
// http.RoundTripper both the real engine and `lbchaos proxy` send requests
// through, and the active health probes that feed its strategies.
package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/faultyserver/upstream"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
)

// SeqHeader is the header Vegeta sets on every request with the sequence
// number of its result; it ties a vegeta.Result to the instance the
// balancer sent it to.
const SeqHeader = "X-Vegeta-Seq"

// Client is the load generator's client: an http.RoundTripper that asks
// the strategy under test (the client-side balancer) for an instance,
// sends the request there (over HTTP/1.1 with an upstream.Client per
// instance, which writes the request and reads the answer on the caller's
// goroutine; see roundTrip), and reports the outcome through the
// strategy's done callback when the response body is fully read or
// closed, or the request fails. It records which instance each request went to, so that every
// result — also one that got no response — is attributed to its instance.
//
// With several replicas of the strategy (an experiment's replicas), request
// seq goes to replica seq mod K: the load is split evenly, and each replica
// sees only its own requests in flight.
type Client struct {
	// Immutable after construction.
	lbs     []*strategies.Balancer
	targets []atomic.Pointer[url.URL] // an instance's address changes when its container restarts
	base    *http.Transport           // to a proxy under test
	timeout time.Duration             // per request, body included; 0 = none
	// abort is the client's own cancellation, never a caller's context:
	// the parent of every call whose request brings none of its own
	// (Vegeta's never do), so that no AfterFunc is registered per call;
	// Abort cancels it.
	abort       context.Context
	cancelAbort context.CancelFunc

	routes routes
	// proxy, when set, is a proxy under test that every request goes to
	// (there is no strategy here); upstream maps its UpstreamHeader to an
	// instance id.
	proxy    *url.URL
	upstream func(string) (int, bool)
	conns    connIDs // a proxy client's connections (conn.go)
	// noRoutes: nobody takes routes (lbchaos proxy), so none is kept.
	noRoutes bool
	// gen and gens (> 1) make a proxy client generator gen's of gens: the
	// proxy sees, and logs, the whole run's sequence numbers.
	gen, gens uint64
	// connCap is the per-instance connection bound; capHits counts requests
	// that found their instance at the bound (they queue in the client).
	connCap  int
	inflight []atomic.Int64
	capHits  atomic.Int64
	// clients hold each instance's HTTP/1.1 client, for its current
	// address; slots, when connCap > 0, its connections (a request holds
	// one from before it is sent until it is finished).
	clients  []atomic.Pointer[instClient]
	clientMu sync.Mutex // serializes replacing a client
	idle     int        // idle connections kept per instance
	slots    []chan struct{}
	// h2c, when set, carries every request over fixed HTTP/2 connections
	// instead of base (see H2C).
	h2c *h2cPool
	// zones, when set, places the replicas and instances in zones
	// (zones.go); clients then holds a client per instance and zone.
	zones *Zones
	// policies: the strategy has a retry or hedge policy; RoundTrip then
	// sends each request as one or more attempts (policy.go).
	policies bool

	// endpointsMu serializes SetEndpoints (endpoints.go): the targets and
	// the members of one call go together.
	endpointsMu sync.Mutex
}

var _ http.RoundTripper = (*Client)(nil)

// NewClient routes requests across targets (base URLs, one per instance,
// indexed by instance id; nil for an instance whose address is not known
// yet, which the balancers must not pick until SetEndpoints gives it one)
// with lbs, the replicas of one strategy (at least one). Each request,
// body included, is cut off after timeout (0 = never); maxConns bounds
// connections per instance (0 = unbounded). opts (H2C) change the
// protocol. Abort cancels the requests under way.
func NewClient(lbs []*strategies.Balancer, targets []*url.URL, timeout time.Duration, maxConns int, opts ...Option) *Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	idle := maxConns
	if idle == 0 || idle > 4096 {
		idle = 4096
	}
	b := &Client{
		lbs:     lbs,
		targets: make([]atomic.Pointer[url.URL], len(targets)),
		timeout: timeout,
		connCap: maxConns,
		base: &http.Transport{
			Proxy:       nil, // backends are local; never go through an environment proxy
			DialContext: dialer.DialContext,
			// Keep every connection a burst opened: the default of 2 idle
			// connections per host would close and reopen connections under
			// load and measure the handshakes instead of the backend.
			MaxIdleConns:        0,
			MaxIdleConnsPerHost: idle,
			MaxConnsPerHost:     maxConns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
		routes:   routes{m: make(map[uint64]*Route)},
		inflight: make([]atomic.Int64, len(targets)),
		clients:  make([]atomic.Pointer[instClient], len(targets)),
		idle:     idle,
	}
	if maxConns > 0 {
		b.slots = make([]chan struct{}, len(targets))
		for i := range b.slots {
			b.slots[i] = make(chan struct{}, maxConns)
		}
	}
	b.abort, b.cancelAbort = context.WithCancel(context.Background())
	b.policies = len(lbs) > 0 && lbs[0].Policy() != nil
	for i, u := range targets {
		b.targets[i].Store(u)
	}
	b.configure(opts)
	return b
}

// NewProxyClient sends every request to the proxy under test at proxy and
// attributes each answer to the instance the backend's InstanceHeader
// names, or else the one the proxy's UpstreamHeader names (upstream maps
// it); requests without either stay unattributed until the caller
// resolves them. instances is the fleet's size. opts (H2C) change the
// protocol.
func NewProxyClient(proxy *url.URL, upstream func(string) (int, bool), instances int, timeout time.Duration, maxConns int, opts ...Option) *Client {
	targets := make([]*url.URL, instances)
	for i := range targets {
		targets[i] = proxy
	}
	b := NewClient(nil, targets, timeout, maxConns)
	b.proxy, b.upstream = proxy, upstream
	b.configure(opts)
	return b
}

// SetGenerator makes a proxy client generator gen's of gens: the sequence
// number the proxy sees and logs for request seq is seq*gens+gen, the
// request's number in the whole run, unique across the generators.
func (b *Client) SetGenerator(gen, gens int) { b.gen, b.gens = uint64(gen), uint64(gens) }

// SetTarget points instance id at a new base URL, for requests picked from
// now on (a restarted container may publish a different port).
func (b *Client) SetTarget(id int, u *url.URL) { b.targets[id].Store(u) }

// Route is what the balancer knows about one request beyond the client's
// result.
type Route struct {
	Instance int    // -1: none yet (a proxy under test names it in its answer)
	Key      uint64 // the request's key, when HasKey
	HasKey   bool
	Timeout  atomic.Bool // the request hit the client timeout
	Aborted  atomic.Bool // cancelled because the run was interrupted
	// BytesIn counts the response body's bytes read by the client: the
	// client keeps no body (Vegeta's MaxBody(0)) and so cannot count them.
	BytesIn atomic.Uint64
	// ServerUs is the instance's own time for the request
	// (faultyserver.ServerTimeHeader) in microseconds, when ServerTimed:
	// not for a request without an answer, nor for an answer that does
	// not say (a proxy's own, another server's).
	ServerUs    atomic.Int64
	ServerTimed atomic.Bool

	conn atomic.Pointer[ConnRef] // a proxy client's connection (conn.go)

	// Attempts lists the request's attempts when its strategy has a retry
	// or hedge policy (policy set); Instance is then the instance of the
	// attempt that gave the request its outcome.
	Attempts []AttemptRecord
	policy   bool
}

// Policy reports whether the request ran under a retry or hedge policy,
// its attempts listed in Attempts.
func (r *Route) Policy() bool { return r.policy }

type routes struct {
	mu sync.Mutex
	m  map[uint64]*Route
}

func (r *routes) put(seq uint64, rt *Route) {
	r.mu.Lock()
	r.m[seq] = rt
	r.mu.Unlock()
}

// take removes and returns the route of seq; ok is false when the request
// never reached the balancer.
func (r *routes) take(seq uint64) (*Route, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.m[seq]
	delete(r.m, seq)
	return rt, ok
}

// Take removes and returns the route recorded for Vegeta sequence number
// seq; ok is false when the request never reached the balancer.
func (b *Client) Take(seq uint64) (*Route, bool) { return b.routes.take(seq) }

// Target returns instance id's current base URL.
func (b *Client) Target(id int) *url.URL { return b.targets[id].Load() }

// KeepNoRoutes stops recording routes: for a balancer whose caller never
// takes them (lbchaos proxy).
func (b *Client) KeepNoRoutes() { b.noRoutes = true }

// ErrNoHost fails a request for which the strategy allowed no instance
// (every one ejected); it is not sent.
var ErrNoHost = engine.ErrNoHost

// UpstreamHeader is set by a proxy under test on every response it sends,
// its own errors included: the backend it chose (nginx: its address,
// HAProxy: its server name "iN", lbchaos proxy: the instance id), which the
// proxy client's upstream function maps to an instance id. It attributes a
// response the backend did not answer itself.
const UpstreamHeader = "X-Lbchaos-Upstream"

// PickedKey is a request context key: a *atomic.Int64 under it receives
// the instance picked for the request (-1 if none).
type PickedKey struct{}

// RoundTrip implements http.RoundTripper.
func (b *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	seq, seqErr := strconv.ParseUint(req.Header.Get(SeqHeader), 10, 64)
	var sreq strategies.Request
	if v := req.Header.Get(strategies.KeyHeader); v != "" {
		if k, err := strconv.ParseUint(v, 10, 64); err == nil {
			sreq = strategies.Request{Key: k, HasKey: true}
		}
	}
	if b.proxy == nil && b.policies {
		replica := 0
		if len(b.lbs) > 1 && seqErr == nil {
			replica = int(seq % uint64(len(b.lbs)))
		}
		return b.roundTripPolicy(req, seq, seqErr == nil, sreq, replica)
	}
	c, err := b.Begin(req.Context(), seq, seqErr == nil, sreq)
	if h, ok := req.Context().Value(PickedKey{}).(*atomic.Int64); ok {
		h.Store(int64(c.Instance()))
	}
	if err != nil {
		return nil, err
	}
	// The request timeout is applied by the call rather than by
	// http.Client: the client's timer would cancel through Request.Cancel,
	// racing the deadline, and a timeout could pass for an ordinary
	// cancellation. It covers the whole exchange, body included.
	rt, ep := c.Route(), c.Instance()
	ctx := c.Context()
	if b.proxy != nil {
		ctx = b.traceConn(ctx, rt)
	}
	// A shallow copy with its own URL: the transport only reads the header,
	// which stays the caller's unless it is changed here (RoundTrip must
	// not modify req). A deep Clone per request cost allocations on the
	// path every request takes (BenchmarkPeer's allocs/req).
	out := req.WithContext(ctx)
	u := *req.URL
	out.URL = &u
	target := b.proxy
	if target == nil {
		target = b.targets[ep].Load()
	}
	out.URL.Scheme = target.Scheme
	out.URL.Host = target.Host
	out.Host = target.Host
	if b.proxy != nil && b.gens > 1 && seqErr == nil {
		out.Header = req.Header.Clone()
		out.Header.Set(SeqHeader, strconv.FormatUint(seq*b.gens+b.gen, 10))
	}

	err = c.holdSlot()
	var resp *http.Response
	if err == nil {
		resp, err = b.roundTrip(out, c.replica, ep, c.conn)
	}
	if err != nil {
		c.Finish(0, "", err)
		return nil, err
	}
	if b.proxy != nil {
		// The backend names itself; an error of the proxy's own names
		// the upstream it tried.
		if id, err := strconv.Atoi(resp.Header.Get(faultyserver.InstanceHeader)); err == nil && id >= 0 && id < len(b.targets) {
			rt.Instance = id
		} else if id, ok := b.upstream(resp.Header.Get(UpstreamHeader)); ok {
			rt.Instance = id
		}
	}
	load := resp.Header.Get(faultyserver.LoadHeader)
	// A service that is not lbchaos's says nothing of its time: no
	// parse, whose error would be an allocation per request.
	if v := resp.Header.Get(faultyserver.ServerTimeHeader); v != "" {
		if us, err := strconv.ParseInt(v, 10, 64); err == nil && us >= 0 {
			rt.ServerUs.Store(us)
			rt.ServerTimed.Store(true)
		}
	}
	resp.Body = &doneBody{rc: resp.Body, read: &rt.BytesIn, call: c, status: resp.StatusCode, load: load}
	return resp, nil
}

// isTimeout reports whether err ended the request because its deadline (the
// request timeout) passed.
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Abort cancels every request under way, and every one sent after it:
// they end as aborted (Route.Aborted), not as failures of their instance.
// The run calls it when it is interrupted.
func (b *Client) Abort() { b.cancelAbort() }

// Close aborts what is still under way and closes every connection.
func (b *Client) Close() {
	b.Abort()
	b.CloseIdleConnections()
}

// CloseIdleConnections closes the client's idle connections.
func (b *Client) CloseIdleConnections() {
	b.base.CloseIdleConnections()
	for i := range b.clients {
		if ic := b.clients[i].Load(); ic != nil {
			ic.up.CloseIdle()
		}
	}
	if b.h2c != nil {
		b.h2c.closeIdle()
	}
}

// InFlight returns how many requests are between pick and done.
func (b *Client) InFlight() int64 {
	var n int64
	for i := range b.inflight {
		n += b.inflight[i].Load()
	}
	return n
}

// CapHits returns how many requests found their instance at the connection
// bound and had to wait in the client for a connection.
func (b *Client) CapHits() int64 { return b.capHits.Load() }

// finisher ends an exchange with its answer's status, load report and
// error: a Call, or the winning attempt of a request under a policy.
type finisher interface {
	Finish(status int, load string, err error)
}

// doneBody reports the end of a response exactly once: at EOF, at the first
// read error, or at Close, whichever comes first: it ends call with the
// response's status and load report.
type doneBody struct {
	rc     io.ReadCloser
	read   *atomic.Uint64 // counts the bytes read; nil: not counted
	once   sync.Once
	call   finisher
	status int
	load   string
}

func (d *doneBody) end(err error) { d.call.Finish(d.status, d.load, err) }

func (d *doneBody) Read(p []byte) (int, error) {
	n, err := d.rc.Read(p)
	if d.read != nil && n > 0 {
		d.read.Add(uint64(n))
	}
	if err != nil {
		end := err
		if end == io.EOF {
			end = nil
		}
		d.once.Do(func() { d.end(end) })
	}
	return n, err
}

func (d *doneBody) Close() error {
	err := d.rc.Close()
	d.once.Do(func() { d.end(nil) })
	return err
}

// instClient is the HTTP/1.1 client of one instance at one address.
type instClient struct {
	host string
	up   *upstream.Client
}

// client returns instance ep's client for host, replacing (and closing)
// the one for an address the instance no longer has.
func (b *Client) client(ep int, host string) *upstream.Client {
	return b.clientAt(ep, host, netip.Addr{})
}

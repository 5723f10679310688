package faultyserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/lbchaos/lbchaos/faultyserver/upstream"
)

// SidecarConfig configures a Sidecar.
type SidecarConfig struct {
	// ID identifies the instance in InstanceHeader and in Stats; >= 0, or
	// Unidentified.
	ID int
	// Upstream is the service forwarded to, as http://host:port.
	Upstream string
	// GRPCUpstream is where gRPC calls are forwarded, over h2c, as
	// http://host:port; "" means Upstream.
	GRPCUpstream string
	// HealthPath is the upstream's health-check path (and query) that
	// /healthz is forwarded to; "" means "/".
	HealthPath string
	// Seed seeds every random choice of the sidecar, as Config.Seed does
	// for a Server.
	Seed uint64
	// InitialFault, when not nil, is in force from the first request.
	InitialFault Fault
	// Token is the control API's bearer token, as Config.Token.
	Token string
	// Shutdown is what ServeSidecar does when its context is done, as
	// Config.Shutdown.
	Shutdown Shutdown
}

// Validate reports the first bad field of c.
func (c SidecarConfig) Validate() error {
	if c.ID < Unidentified {
		return fmt.Errorf("id: must be >= 0, or %d for an instance named later through %s, got %d", Unidentified, IdentityPath, c.ID)
	}
	if _, err := ParseUpstream(c.Upstream); err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	if c.GRPCUpstream != "" {
		if _, err := ParseUpstream(c.GRPCUpstream); err != nil {
			return fmt.Errorf("grpc_upstream: %w", err)
		}
	}
	if _, err := parseHealthPath(c.HealthPath); err != nil {
		return fmt.Errorf("health_path: %w", err)
	}
	if err := CheckToken(c.Token); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if err := c.Shutdown.Validate(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// ParseUpstream reads an upstream address, which must be http://host:port
// with no path beyond "/", query, fragment or user.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	bad := err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.Hostname() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil
	if bad {
		return nil, fmt.Errorf("want http://host:port, got %q", s)
	}
	return &url.URL{Scheme: "http", Host: u.Host}, nil
}

// parseHealthPath reads a health path: "" (meaning "/") or an absolute path
// with an optional query.
func parseHealthPath(s string) (*url.URL, error) {
	if s == "" {
		s = "/"
	}
	u, err := url.Parse(s)
	if err != nil || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || u.Fragment != "" {
		return nil, fmt.Errorf("want an absolute path such as /healthz, got %q", s)
	}
	return u, nil
}

// Sidecar runs the fault model in front of a real HTTP service: a reverse
// proxy that forwards every service request to its upstream and carries out
// the plan the current fault makes for it (see PlanProxy and Action). It
// serves the same control API and /healthz as a Server and counts the same
// Stats; it has no workers and no queue, so Stats.Queued is always 0 and
// Stats.InFlight counts requests being forwarded (including a slow fault's
// added wait and a held answer). It is an http.Handler; create it with
// NewSidecar. All methods are safe for concurrent use.
type Sidecar struct {
	instanceState // fault, random source, counters, load window, drain

	// Immutable after NewSidecar.
	cfg       SidecarConfig
	upstream  *url.URL
	grpcUp    *url.URL // where gRPC calls go: GRPCUpstream, else upstream
	health    *url.URL
	client    *upstream.Client // forwards requests; upgrades go through transport
	transport *http.Transport
	h2c       *http.Transport // forwards gRPC calls (grpcsidecar.go)
	errorLog  *log.Logger

	closeOnce sync.Once
	done      chan struct{}   // closed by Close
	doneCtx   context.Context // cancelled by Close; cancels forwarded requests
	cancel    context.CancelFunc
}

var _ http.Handler = (*Sidecar)(nil)

// NewSidecar validates cfg and returns a Sidecar for it.
func NewSidecar(cfg SidecarConfig) (*Sidecar, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("faultyserver: sidecar config: %w", err)
	}
	up, _ := ParseUpstream(cfg.Upstream)
	grpcUp := up
	if cfg.GRPCUpstream != "" {
		grpcUp, _ = ParseUpstream(cfg.GRPCUpstream)
	}
	hp, _ := parseHealthPath(cfg.HealthPath)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sidecar{
		cfg:      cfg,
		upstream: up,
		grpcUp:   grpcUp,
		health:   hp,
		client:   upstream.New(up.Host),
		transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			// Pass Accept-Encoding and encoded bodies through untouched.
			DisableCompression: true,
		},
		h2c:      newH2CTransport(),
		errorLog: log.New(io.Discard, "", 0),
		done:     make(chan struct{}),
		doneCtx:  ctx,
		cancel:   cancel,
	}
	s.init(cfg.ID, cfg.Seed, cfg.Token, 0, s.done)
	if cfg.InitialFault != nil {
		if err := s.SetFault(cfg.InitialFault); err != nil {
			cancel()
			return nil, fmt.Errorf("faultyserver: sidecar config: initial fault: %w", err)
		}
	}
	return s, nil
}

// Config returns the configuration s was created with.
func (s *Sidecar) Config() SidecarConfig { return s.cfg }

// Close cancels every forwarded request, answering 503 where no answer has
// begun, ends failing and hanging requests with 503 and answers every later
// service request 503. It is idempotent and does not close any listener.
func (s *Sidecar) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.cancel()
		s.client.Close()
		s.transport.CloseIdleConnections()
		s.h2c.CloseIdleConnections()
	})
}

// ServeHTTP serves the control API under ControlPrefix, the health check at
// HealthPath and forwards every other path to the upstream: gRPC calls
// over h2c (see serveGRPC), other requests over HTTP/1.1.
func (s *Sidecar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isGRPC(r) {
		s.serveGRPC(w, r)
		return
	}
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, ControlPrefix):
		w.Header().Set(InstanceHeader, s.ident().str)
		serveControl(s, w, r)
	case p == HealthPath:
		s.serveHealth(w, r)
	default:
		s.handle(sidecarAnswer{s, w, r, false})
	}
}

// handle carries out the current fault's plan for one request, HTTP or
// gRPC (see admit). Every answer it gives carries InstanceHeader and
// LoadHeader (the requests being forwarded at the moment of the answer,
// itself not among them). The request counts as executed (ExecutedPath) as
// it is admitted, before its body, which goes on to the upstream as it
// comes, is read.
func (s *Sidecar) handle(x sidecarAnswer) {
	s.seqs.record(x.r.Header[SeqHeader])
	if a, ok := admit(x.r.Context(), &s.instanceState, x); ok {
		s.forward(x, a)
	}
}

// sidecarAnswer answers one request a Sidecar serves: an HTTP request,
// or with grpc a gRPC call.
type sidecarAnswer struct {
	s    *Sidecar
	w    http.ResponseWriter
	r    *http.Request
	grpc bool
}

func (a sidecarAnswer) fail(load, status int, code codes.Code, msg string) {
	if a.grpc {
		a.s.grpcError(a.w, load, code, msg)
		return
	}
	a.s.httpError(a.w, load, status, msg)
}

func (a sidecarAnswer) reset(wholeConn bool) { resetRequest(a.w, a.r, wholeConn) }

// track counts a forwarded request, in flight and busy from now until end
// is called.
func (s *Sidecar) track() (began time.Time, end func()) {
	s.inFlight.Add(1)
	began = time.Now()
	s.window.begin(began)
	return began, func() {
		ended := time.Now()
		s.busy.Add(int64(ended.Sub(began)))
		s.inFlight.Add(-1)
		s.window.end(ended)
	}
}

// forwardContext is a forwarded request's context: the client's, cancelled
// too when the sidecar closes.
func (s *Sidecar) forwardContext(client context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(client)
	stop := context.AfterFunc(s.doneCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// forward waits a.Service, forwards the request and answers with the
// upstream's answer, held so that it ends no sooner than a.Scale times the
// upstream's time (see dilatedBody): over HTTP/1.1, or for a gRPC call
// over h2c, relayed by relayGRPC.
func (s *Sidecar) forward(x sidecarAnswer, a Action) {
	began, end := s.track()
	defer end()
	client := x.r.Context()
	ctx, cancel := s.forwardContext(client)
	defer cancel()

	if err := sleepUntil(ctx, began.Add(a.Service), s.done); err != nil {
		s.forwardError(client, x, err)
		return
	}
	if !x.grpc && upstream.IsUpgrade(x.r.Header) {
		s.forwardUpgrade(client, x, x.r.WithContext(ctx))
		return
	}
	start := time.Now()
	var resp *http.Response
	var err error
	if x.grpc {
		resp, err = s.h2c.RoundTrip(upstream.ProxyRequest(ctx, x.r, s.grpcUp))
	} else {
		resp, err = s.client.RoundTrip(upstream.ProxyRequest(ctx, x.r, s.upstream))
	}
	if err != nil {
		s.forwardError(client, x, err)
		return
	}
	defer resp.Body.Close()
	var trailers []string
	if !x.grpc {
		trailers = upstream.TrailerKeys(resp) // before the dilated body reads on
	}
	var body io.Reader = resp.Body
	if a.Scale > 1 {
		// The body's clock starts before the headers are held, so that
		// chunks arriving meanwhile keep their own times.
		d := newDilatedBody(ctx, resp.Body, start, a.Scale, s.done)
		defer d.Close()
		body = d
		at := start.Add(clampDuration(float64(time.Since(start)) * a.Scale))
		if err := sleepUntil(ctx, at, s.done); err != nil {
			s.forwardError(client, x, err)
			return
		}
	}
	if a.Cut {
		x.w = newCutWriter(x.w, x.r, a)
	}
	if x.grpc {
		s.relayGRPC(client, x.w, resp, body)
		return
	}
	h := x.w.Header()
	upstream.CopyEndToEnd(h, resp.Header)
	s.count(h, resp.StatusCode)
	if err := upstream.SendProxied(x.w, resp, body, trailers); err != nil {
		panic(http.ErrAbortHandler) // cut short: the client must not see it complete
	}
}

// count marks an answer of the upstream's as the sidecar's, in h, and
// counts it as served or failed.
func (s *Sidecar) count(h http.Header, status int) {
	h[InstanceHeader] = s.ident().header
	setLoad(h, int(s.inFlight.Load())-1)
	s.countAnswer(status >= 400)
}

// forwardUpgrade forwards a request for a protocol upgrade (WebSocket,
// h2c) through httputil.ReverseProxy, which carries the switched
// connection both ways. Faults that hold answers do not apply to it.
func (s *Sidecar) forwardUpgrade(client context.Context, x sidecarAnswer, r *http.Request) {
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(s.upstream)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport: s.transport,
		ErrorLog:  s.errorLog,
		ModifyResponse: func(resp *http.Response) error {
			s.count(resp.Header, resp.StatusCode)
			return nil
		},
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			s.forwardError(client, x, err)
		},
	}
	p.ServeHTTP(x.w, r)
}

// forwardError answers a request whose forwarding failed before an answer
// began: dropped when its client went away, 503 (gRPC: UNAVAILABLE) when
// the sidecar closed, else 502 naming the upstream's error (gRPC:
// UNAVAILABLE, as gRPC's HTTP status mapping reads a 502).
func (s *Sidecar) forwardError(client context.Context, x sidecarAnswer, err error) {
	load := int(s.inFlight.Load()) - 1
	switch {
	case client.Err() != nil:
		s.dropped.Add(1)
	case errors.Is(err, errClosed) || s.doneCtx.Err() != nil:
		answerFault(&s.instanceState, x, load, http.StatusServiceUnavailable, codes.Unavailable, "instance closed")
	default:
		answerFault(&s.instanceState, x, load, http.StatusBadGateway, codes.Unavailable, "upstream: "+err.Error())
	}
}

// httpError writes a plain-text error answer to a service request.
func (s *Sidecar) httpError(w http.ResponseWriter, load, status int, msg string) {
	h := w.Header()
	h[InstanceHeader] = s.ident().header
	setLoad(h, load)
	http.Error(w, msg, status)
}

// serveHealth answers /healthz: 503 once closed or shutting down, the current fault's
// health_status when it sets one, else the upstream's answer to its health
// path.
func (s *Sidecar) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(InstanceHeader, s.ident().str)
	if !healthMethod(w, r) {
		return
	}
	status, own := HealthOverride(s.Fault())
	select {
	case <-s.done:
		status, own = http.StatusServiceUnavailable, true
	default:
		if s.stopping.Load() {
			status, own = http.StatusServiceUnavailable, true
		}
	}
	if own {
		writeHealth(w, status)
		return
	}
	out := upstream.ProxyRequest(r.Context(), r, s.upstream)
	out.URL.Path, out.URL.RawPath, out.URL.RawQuery = s.health.Path, s.health.RawPath, s.health.RawQuery
	resp, err := s.client.RoundTrip(out)
	if err != nil {
		if r.Context().Err() == nil {
			http.Error(w, "upstream health check: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	defer resp.Body.Close()
	upstream.CopyEndToEnd(w.Header(), resp.Header)
	w.Header()[InstanceHeader] = s.ident().header
	if err := upstream.SendProxied(w, resp, nil, upstream.TrailerKeys(resp)); err != nil {
		panic(http.ErrAbortHandler)
	}
}

package faultyserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// InstanceHeader is set on every response (service, error, control and
// health) to the instance id in decimal.
const InstanceHeader = "X-Lbchaos-Instance"

// ControlPrefix is the path prefix reserved for the control API.
const ControlPrefix = "/_chaos/"

// HealthPath is the health-check path.
const HealthPath = "/healthz"

// Config configures one instance.
type Config struct {
	// ID identifies the instance in InstanceHeader and in Stats; >= 0, or
	// Unidentified.
	ID int
	// Workers is the number of requests served at once; 0 means unlimited,
	// so nothing ever queues. The caller applies its own default.
	Workers int
	// QueueLimit is the most requests waiting for a worker; 0 means
	// unbounded. A request arriving at a full queue is answered 503 at once.
	QueueLimit int
	// Service is the service-time distribution.
	Service Dist
	// Seed seeds every random choice of this server (a PCG source). Mix the
	// instance id in before passing it, so instances differ.
	Seed uint64
	// KeepAbandoned keeps a request whose client went away: it stays
	// queued, is served for its full service time and counts as served.
	// When false such a request is dropped at once, freeing its queue slot
	// or worker, and counts as dropped.
	KeepAbandoned bool
	// InitialFault, when not nil, is in force from the first request, as if
	// set through the control API before the server started.
	InitialFault Fault
	// Token, when set, is the bearer token every control API request must
	// carry (auth.go); "" leaves the control API open.
	Token string
	// OnPanic, when set, is told of every panic in the server's code (see
	// Panic): a handler's, after which the request is aborted and the
	// server goes on; one of a goroutine started with Go, after which the
	// instance is to be taken as dead; and one of the precise sleeper
	// every server of the process shares (precise.go), after which
	// service times are kept by the runtime's timers. When nil, a
	// handler's panic is left to net/http (which logs it and drops the
	// connection) and a goroutine's ends the process. It is called on the
	// panicking goroutine and must not block.
	OnPanic func(Panic)
	// Shutdown is what Serve and ServeListener do when their context is
	// done; the zero value is ShutdownFinish.
	Shutdown Shutdown
	// ResponseBytes is the size of the body of every HTTP answer to a
	// served request: "ok\n" padded to that many bytes; 0 (or less than 3)
	// means "ok\n" alone. The bandwidth and cut faults act on it.
	ResponseBytes int64
}

// MaxResponseBytes bounds Config.ResponseBytes.
const MaxResponseBytes = 16 << 20

// Validate reports the first bad field of c.
func (c Config) Validate() error {
	if c.ID < Unidentified {
		return fmt.Errorf("id: must be >= 0, or %d for an instance named later through %s, got %d", Unidentified, IdentityPath, c.ID)
	}
	if c.Workers < 0 {
		return fmt.Errorf("workers: must be >= 0 (0 = unlimited), got %d", c.Workers)
	}
	if c.QueueLimit < 0 {
		return fmt.Errorf("queue_limit: must be >= 0 (0 = unbounded), got %d", c.QueueLimit)
	}
	if err := c.Service.Validate(); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if err := CheckToken(c.Token); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if err := c.Shutdown.Validate(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if c.ResponseBytes < 0 || c.ResponseBytes > MaxResponseBytes {
		return fmt.Errorf("response_bytes: must be within [0,%s], got %d", ByteSize(MaxResponseBytes), c.ResponseBytes)
	}
	return nil
}

// Stats is a snapshot of one instance's counters. Health checks and control
// requests are not counted.
type Stats struct {
	ID int `json:"id"`
	// InFlight is the number of requests holding a worker.
	InFlight int64 `json:"in_flight"`
	// Queued is the number of requests waiting for a worker.
	Queued int64 `json:"queued"`
	// Served counts 2xx answers.
	Served int64 `json:"served"`
	// Failed counts error answers: injected failures, resets, a full queue
	// and requests cut short by Close.
	Failed int64 `json:"failed"`
	// Dropped counts requests whose client went away before an answer:
	// while queued, while being served, or under a fail delay or hang
	// (with KeepAbandoned, such a request is still served, for nobody).
	Dropped int64 `json:"dropped"`
	// BusyS is the worker time spent on requests since the start or the
	// last reset, in seconds: from a worker being taken to its release.
	BusyS float64 `json:"busy_s"`
	// Fault is the current fault as MarshalFault writes it, or null.
	Fault json.RawMessage `json:"fault"`
}

// Server is one fake service instance; it is an http.Handler. Create it with
// New. All methods are safe for concurrent use.
type Server struct {
	instanceState // fault, random source, counters, load window, drain

	// Immutable after New.
	cfg  Config
	body []byte                     // every served HTTP answer's (Config.ResponseBytes)
	grpc *grpc.Server               // the gRPC face (grpcserver.go)
	down atomic.Pointer[Downstream] // the tier's calls (downstream.go); nil: none

	// handlerHook, set only by tests (export_test.go) before the first
	// request, runs at the start of every HTTP request and gRPC call, with
	// its path.
	handlerHook func(path string)
}

var _ http.Handler = (*Server)(nil)

// New validates cfg and returns a Server for it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("faultyserver: config: %w", err)
	}
	s := &Server{cfg: cfg, body: responseBody(cfg.ResponseBytes)}
	s.pool = newPool(cfg.Workers, cfg.QueueLimit)
	s.init(cfg.ID, cfg.Seed, cfg.Token, cfg.Workers, s.pool.done)
	sampler, err := NewSampler(cfg.Service, s.rng)
	if err != nil {
		return nil, fmt.Errorf("faultyserver: config: service: %w", err)
	}
	s.sampler = sampler
	if cfg.InitialFault != nil {
		if err := s.SetFault(cfg.InitialFault); err != nil {
			return nil, fmt.Errorf("faultyserver: config: initial fault: %w", err)
		}
	}
	s.grpc = newGRPCServer(s)
	shareReports(s)
	return s, nil
}

// Config returns the configuration s was created with.
func (s *Server) Config() Config { return s.cfg }

// Close answers every request waiting in the server 503 at once (queued,
// being served, under a fail delay or hanging) and every later service
// request too. It is idempotent and does not close any listener.
func (s *Server) Close() {
	s.pool.close()
	unshareReports(s)
}

// ServeHTTP serves gRPC calls (see GRPCMethod), the control API under
// ControlPrefix, the health check at HealthPath and the service on every
// other path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OnPanic != nil {
		defer s.recoverHandler(r)
	}
	if isGRPC(r) {
		s.serveGRPC(w, r)
		return
	}
	if s.handlerHook != nil {
		s.handlerHook(r.URL.Path)
	}
	w.Header().Set(InstanceHeader, s.ident().str)
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, ControlPrefix):
		s.control(w, r)
	case p == HealthPath:
		s.health(w, r)
	default:
		s.service(w, r)
	}
}

// serverAnswerer answers a service request of the Server's in its
// protocol: HTTP (httpAnswer) or gRPC (grpcAnswer).
type serverAnswerer interface {
	answerer
	// ok answers a served request; load is the LoadHeader number.
	ok(load int)
}

// ServerTimeHeader is set on every HTTP answer to a service request that
// the server gives itself: the microseconds from the start of its handler
// to the answer (queueing, service time and any fault's delay). A client's
// latency minus it is the transport's share: connection, HTTP stack and
// scheduling on both sides.
const ServerTimeHeader = "X-Lbchaos-Server-Time"

// httpAnswer answers an HTTP request.
type httpAnswer struct {
	w     http.ResponseWriter
	r     *http.Request
	start time.Time // the handler's start, for ServerTimeHeader
	body  []byte    // a served request's answer
}

func (a httpAnswer) setServerTime(h http.Header) {
	h[ServerTimeHeader] = []string{strconv.FormatInt(time.Since(a.start).Microseconds(), 10)}
}

func (a httpAnswer) ok(load int) {
	h := a.w.Header()
	setLoad(h, load)
	a.setServerTime(h)
	h["Content-Type"] = textPlain
	h["Content-Length"] = []string{strconv.Itoa(len(a.body))}
	a.w.WriteHeader(http.StatusOK)
	_, _ = a.w.Write(a.body)
}

func (a httpAnswer) fail(load, status int, _ codes.Code, msg string) {
	setLoad(a.w.Header(), load)
	a.setServerTime(a.w.Header())
	http.Error(a.w, msg, status)
}

func (a httpAnswer) reset(wholeConn bool) { resetRequest(a.w, a.r, wholeConn) }

// service answers a service request over HTTP, once it has read the
// request, body included, and recorded its execution (receive): every
// fault acts on a request the instance has taken in.
func (s *Server) service(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !s.receive(r) {
		s.dropped.Add(1)
		return
	}
	x := httpAnswer{w, r, start, s.body}
	if a, ok := admit(r.Context(), &s.instanceState, x); ok {
		if a.Cut {
			x.w = newCutWriter(w, r, a)
		}
		serveOn(r.Context(), s, x, a.Service)
	}
}

// handle answers a service request, whatever its protocol; ctx ends when
// its client goes away (see admit).
func handle[A serverAnswerer](ctx context.Context, s *Server, w A) {
	if a, ok := admit(ctx, &s.instanceState, w); ok {
		serveOn(ctx, s, w, a.Service)
	}
}

// serveOn runs a request on a worker for d and answers it.
func serveOn[A serverAnswerer](ctx context.Context, s *Server, w A, d time.Duration) {
	if s.cfg.KeepAbandoned {
		serveKept(ctx, s, w, d)
		return
	}
	load, err := s.workAndCall(ctx, d)
	answerWork(s, w, load, err)
}

// serveKept serves a request that is kept when its client goes away: the
// work runs on a goroutine of its own, under a context only a Reset
// cancels (abandon.go); the handler answers when it ends, or returns as
// soon as the client goes away, so that the connection is freed while the
// work goes on (an instance can keep far more abandoned requests than it
// can hold connections).
func serveKept[A serverAnswerer](ctx context.Context, s *Server, w A, d time.Duration) {
	kctx, done := s.abandoned.keep(ctx)
	type result struct {
		load int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		defer done()
		load, err := s.workAndCall(kctx, d)
		res <- result{load, err}
	}()
	select {
	case r := <-res:
		answerWork(s, w, r.load, r.err)
	case <-ctx.Done():
		s.dropped.Add(1) // no answer reaches it; its work goes on
	}
}

// work takes a worker (queueing for one), holds it for d and releases it.
// It returns the load to answer with and nil, or why the request was not
// served: errQueueFull, errClosed or ctx's error.
func (s *Server) work(ctx context.Context, d time.Duration) (load int, err error) {
	switch load, err = s.pool.acquire(ctx); err {
	case nil:
	case errClosed:
		return s.pool.load(), err
	default:
		return load, err
	}
	began := time.Now()
	s.window.begin(began)
	err = ctx.Err() // the client may have gone just as a worker came free
	if err == nil {
		err = s.sleep(ctx, d)
	}
	ended := time.Now()
	s.busy.Add(int64(ended.Sub(began)))
	load = s.pool.release()
	s.window.end(ended)
	return load, err
}

// answerWork answers a request after work.
func answerWork[A serverAnswerer](s *Server, w A, load int, err error) {
	switch err {
	case nil:
		s.countAnswer(false)
		w.ok(load)
	case errQueueFull:
		answerFault(&s.instanceState, w, load, http.StatusServiceUnavailable, codes.OK, "queue full")
	case errClosed:
		answerFault(&s.instanceState, w, load, http.StatusServiceUnavailable, codes.OK, "instance closed")
	case errDownstream:
		answerDownstream(s, w, load)
	default:
		s.dropped.Add(1)
	}
}

var okBody = []byte("ok\n")

// responseBody is the body of a served answer of n bytes: okBody, padded
// with dots and ending in a newline when n is larger.
func responseBody(n int64) []byte {
	if n <= int64(len(okBody)) {
		return okBody
	}
	b := bytes.Repeat([]byte{'.'}, int(n))
	copy(b, "ok ")
	b[n-1] = '\n'
	return b
}

// LoadHeader is set on every answer to a service request, whatever its
// status (a success, an injected failure, a full queue, a closed instance),
// to the number of other requests in the instance as it answers: those
// holding a worker or queued for one, the answering request not among them.
// A failing or hanging request holds no worker and is never counted. This
// is the server-reported load that balancers such as Uber's and Netflix's
// read, and the simulator reports the same count. Health checks and control
// requests do not carry it.
const LoadHeader = "X-Lbchaos-Load"

// setLoad sets LoadHeader in h to load. LoadHeader is in canonical form,
// so the map is written directly, without Header.Set's canonicalization.
func setLoad(h http.Header, load int) {
	if load >= 0 && load < len(loadValues) {
		h[LoadHeader] = loadValues[load]
		return
	}
	h[LoadHeader] = []string{strconv.Itoa(load)}
}

// loadValues are LoadHeader's values for the loads 0-255, and textPlain a
// service answer's Content-Type, made once and shared by every answer: a
// header's value slices are read when the answer is written, never written
// to, and each has capacity 1, so that an append copies it. That is an
// allocation less per answer for each.
var (
	loadValues = func() (v [256][]string) {
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}
		}
		return v
	}()
	textPlain = []string{"text/plain; charset=utf-8"}
)

// sleep waits d, accurately (see precise.go). It returns early with ctx.Err() when ctx is done and with
// errClosed when the server closes.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	return sleepUntil(ctx, time.Now().Add(d), s.closed)
}

// health answers /healthz: 503 once closed or shutting down (Shutdown),
// else the current fault's HealthStatus, else 200.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !healthMethod(w, r) {
		return
	}
	status := http.StatusOK
	select {
	case <-s.closed:
		status = http.StatusServiceUnavailable
	default:
		switch f := s.Fault(); {
		case s.stopping.Load():
			status = http.StatusServiceUnavailable
		case f != nil:
			status = f.HealthStatus()
		}
	}
	writeHealth(w, status)
}

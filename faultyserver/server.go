package faultyserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
	// ID identifies the instance in InstanceHeader and in Stats; >= 0.
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
}

// Validate reports the first bad field of c.
func (c Config) Validate() error {
	if c.ID < 0 {
		return fmt.Errorf("id: must be >= 0, got %d", c.ID)
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
	// while queued, while being served, or under a fail delay or hang.
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
	// Immutable after New.
	cfg  Config
	id   string // cfg.ID formatted for InstanceHeader
	pool *pool

	randMu  sync.Mutex // guards rng and sampler
	src     *rand.PCG  // rng's source, reseeded by Reset
	rng     *rand.Rand
	sampler *Sampler

	faultSlot // the current fault

	served, failed, dropped atomic.Int64
	busy                    atomic.Int64 // nanoseconds of worker time
	window                  *loadWindow  // recent rates and utilization, for load reports

	grpc *grpc.Server // the gRPC face (grpcserver.go); immutable after New

	drainOnce sync.Once
	drain     chan struct{} // closed when Serve begins shutting down

	// handlerHook, set only by tests (export_test.go) before the first
	// request, runs at the start of every HTTP request and gRPC call, with
	// its path.
	handlerHook func(path string)
}

// faultSlot holds an instance's current fault, for the fake server and the
// sidecar alike; safe for concurrent use.
type faultSlot struct {
	fault atomic.Pointer[faultBox] // nil when none
}

type faultBox struct{ f Fault }

// SetFault validates f and makes it the current fault; container faults are
// refused. It applies to requests that arrive after it; requests already
// in the instance keep the plan they arrived with.
func (s *faultSlot) SetFault(f Fault) error {
	if f == nil {
		return errors.New("faultyserver: nil fault; use ClearFault")
	}
	if err := checkFault(f); err != nil {
		return err
	}
	s.fault.Store(&faultBox{f})
	return nil
}

// ClearFault removes the current fault, if any.
func (s *faultSlot) ClearFault() { s.fault.Store(nil) }

// Fault returns the current fault, or nil when there is none.
func (s *faultSlot) Fault() Fault {
	if b := s.fault.Load(); b != nil {
		return b.f
	}
	return nil
}

var _ http.Handler = (*Server)(nil)

// pcgStream is the second PCG seed word; Config.Seed is the first.
const pcgStream = 0x6c626368616f73 // "lbchaos"

// NewSource returns a fresh random source seeded as a server with
// Config.Seed seed seeds its own. A simulator that samples the service time
// from it and then plans the current fault with it, request by request,
// makes the same choices as that server.
func NewSource(seed uint64) *rand.PCG { return rand.NewPCG(seed, pcgStream) }

// New validates cfg and returns a Server for it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("faultyserver: config: %w", err)
	}
	src := NewSource(cfg.Seed)
	rng := rand.New(src)
	sampler, err := NewSampler(cfg.Service, rng)
	if err != nil {
		return nil, fmt.Errorf("faultyserver: config: service: %w", err)
	}
	s := &Server{
		cfg:     cfg,
		id:      strconv.Itoa(cfg.ID),
		pool:    newPool(cfg.Workers, cfg.QueueLimit),
		src:     src,
		rng:     rng,
		sampler: sampler,
		drain:   make(chan struct{}),
		window:  newLoadWindow(nil, cfg.Workers),
	}
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

// checkFault validates f and refuses container faults, which act on a
// container rather than inside a server or sidecar.
func checkFault(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if IsContainerFault(f) {
		return errContainerFault(f)
	}
	return nil
}

// Stats returns a snapshot of the counters and the current fault.
func (s *Server) Stats() Stats {
	busy, queued := s.pool.counts()
	st := Stats{
		ID:       s.cfg.ID,
		InFlight: int64(busy),
		Queued:   int64(queued),
		Served:   s.served.Load(),
		Failed:   s.failed.Load(),
		Dropped:  s.dropped.Load(),
		BusyS:    time.Duration(s.busy.Load()).Seconds(),
	}
	if f := s.Fault(); f != nil {
		if b, err := MarshalFault(f); err == nil {
			st.Fault = b
		}
	}
	return st
}

// Reset clears the fault, zeroes the served, failed and dropped counters and
// reseeds the random source from Config.Seed. InFlight and Queued describe
// requests still in the server and are kept.
func (s *Server) Reset() {
	s.ClearFault()
	s.served.Store(0)
	s.failed.Store(0)
	s.dropped.Store(0)
	s.busy.Store(0)
	s.window.reset()
	// Reseed, so that the same requests draw the same service times and
	// fault decisions as on a new server with this configuration.
	s.randMu.Lock()
	s.src.Seed(s.cfg.Seed, pcgStream)
	s.randMu.Unlock()
}

// Close answers every request waiting in the server 503 at once (queued,
// being served, under a fail delay or hanging) and every later service
// request too. It is idempotent and does not close any listener.
func (s *Server) Close() {
	s.pool.close()
	unshareReports(s)
}

// closed is done once Close has been called.
func (s *Server) closed() <-chan struct{} { return s.pool.done }

// beginDrain ends hanging requests with 503 so a graceful shutdown need not
// wait for their clients to give up.
func (s *Server) beginDrain() { s.drainOnce.Do(func() { close(s.drain) }) }

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
	w.Header().Set(InstanceHeader, s.id)
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, ControlPrefix):
		s.control(w, r)
	case p == HealthPath:
		s.health(w, r)
	default:
		s.service(w, r)
	}
}

// plan captures the current fault and samples the request's fate.
func (s *Server) plan() Action {
	f := s.Fault()
	s.randMu.Lock()
	defer s.randMu.Unlock()
	base := s.sampler.Sample()
	if f == nil {
		return Action{Kind: ActionServe, Service: base}
	}
	return f.Plan(base, s.rng)
}

// answerer answers one service request in its protocol: HTTP (httpAnswer)
// or gRPC (grpcAnswer). load is the LoadHeader number.
type answerer interface {
	// ok answers a served request.
	ok(load int)
	// fail answers with an error: status for HTTP, code for gRPC (OK
	// meaning UNAVAILABLE).
	fail(load, status int, code codes.Code, msg string)
	// reset ends the request without an answer: its stream, or with
	// wholeConn its connection.
	reset(wholeConn bool)
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
}

func (a httpAnswer) setServerTime(h http.Header) {
	h[ServerTimeHeader] = []string{strconv.FormatInt(time.Since(a.start).Microseconds(), 10)}
}

func (a httpAnswer) ok(load int) {
	h := a.w.Header()
	setLoad(h, load)
	a.setServerTime(h)
	h["Content-Type"] = textPlain
	a.w.WriteHeader(http.StatusOK)
	_, _ = a.w.Write(okBody)
}

func (a httpAnswer) fail(load, status int, _ codes.Code, msg string) {
	setLoad(a.w.Header(), load)
	a.setServerTime(a.w.Header())
	http.Error(a.w, msg, status)
}

func (a httpAnswer) reset(wholeConn bool) { resetRequest(a.w, a.r, wholeConn) }

// service answers a service request over HTTP.
func (s *Server) service(w http.ResponseWriter, r *http.Request) {
	handle(s, r.Context(), httpAnswer{w, r, time.Now()})
}

// handle answers a service request, whatever its protocol; ctx ends when
// its client goes away. Every answer it gives, whatever its status, carries
// the load (LoadHeader, see there); a reset carries nothing, and a request
// whose client went away gets no answer. It is generic rather than taking
// an interface so that the HTTP answerer is not boxed on every request.
func handle[A answerer](s *Server, ctx context.Context, w A) {
	select {
	case <-s.closed():
		s.answerError(w, s.pool.load(), http.StatusServiceUnavailable, "instance closed")
		return
	default:
	}
	a := s.plan()
	switch a.Kind {
	case ActionFail:
		// A failing request holds no worker, so the load is the pool's as
		// the delay ends. Its delay counts as work in the load report's
		// utilization (not in Stats.BusyS), see loadReport.
		began := time.Now()
		s.window.begin(began)
		err := s.sleep(ctx, a.Delay)
		s.window.end(time.Now())
		switch err {
		case nil:
			s.answerFault(w, s.pool.load(), a.Status, a.GRPCCode, "injected fault")
		case errClosed:
			s.answerError(w, s.pool.load(), http.StatusServiceUnavailable, "instance closed")
		default:
			s.dropped.Add(1)
		}
	case ActionHang:
		select {
		case <-ctx.Done():
			s.dropped.Add(1)
		case <-s.closed():
			s.answerError(w, s.pool.load(), http.StatusServiceUnavailable, "instance closed")
		case <-s.drain:
			s.answerError(w, s.pool.load(), http.StatusServiceUnavailable, "instance shutting down")
		}
	case ActionReset:
		s.failed.Add(1)
		s.window.answer(true)
		w.reset(a.WholeConn)
	default:
		serveOn(s, ctx, w, a.Service)
	}
}

// serveOn runs a request on a worker for d.
func serveOn[A answerer](s *Server, ctx context.Context, w A, d time.Duration) {
	keep := s.cfg.KeepAbandoned
	switch load, err := s.pool.acquire(ctx, keep); err {
	case nil:
	case errQueueFull:
		s.answerError(w, load, http.StatusServiceUnavailable, "queue full")
		return
	case errClosed:
		s.answerError(w, s.pool.load(), http.StatusServiceUnavailable, "instance closed")
		return
	default:
		s.dropped.Add(1)
		return
	}
	if keep {
		ctx = context.WithoutCancel(ctx)
	}
	began := time.Now()
	s.window.begin(began)
	err := ctx.Err() // the client may have gone just as a worker came free
	if err == nil {
		err = s.sleep(ctx, d)
	}
	ended := time.Now()
	s.busy.Add(int64(ended.Sub(began)))
	load := s.pool.release()
	s.window.end(ended)
	switch err {
	case nil:
		s.served.Add(1)
		s.window.answer(false)
		w.ok(load)
	case errClosed:
		s.answerError(w, load, http.StatusServiceUnavailable, "instance closed")
	default:
		s.dropped.Add(1)
	}
}

var okBody = []byte("ok\n")

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
	return sleepUntil(ctx, time.Now().Add(d), s.closed())
}

// coarseFrom is the shortest sleep whose start sleepUntil leaves to a
// runtime timer: a shorter one is the precise sleeper's alone, which wakes
// the process once at its end instead of twice (the timer, then the
// sleeper's alarm). A process that serves little load, such as one
// instance in its own container, sleeps between the two, and each wake-up
// costs it a trip through the scheduler; longer sleeps, which a client may
// well abandon, stay off the sleeper's heap until their last preciseSpan.
const coarseFrom = 100 * time.Millisecond

// sleepUntil waits until deadline, accurately (see precise.go). It returns
// early with ctx.Err() when ctx is done and with errClosed when closed is.
func sleepUntil(ctx context.Context, deadline time.Time, closed <-chan struct{}) error {
	d := time.Until(deadline)
	if d <= 0 {
		return nil
	}
	if coarse := d - preciseSpan; d > coarseFrom {
		t := time.NewTimer(coarse)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-closed:
			t.Stop()
			return errClosed
		}
	}
	select {
	case <-sleeper.at(deadline):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errClosed
	}
}

// answerError answers a service request with an error of the instance's
// own (HTTP status, UNAVAILABLE for gRPC), carrying load, and counts it as
// failed.
func (s *Server) answerError(w answerer, load, status int, msg string) {
	s.answerFault(w, load, status, codes.OK, msg)
}

// answerFault answers a service request with an error, status for HTTP
// and code for gRPC, carrying load, and counts it as failed.
func (s *Server) answerFault(w answerer, load, status int, code codes.Code, msg string) {
	s.failed.Add(1)
	s.window.answer(true)
	w.fail(load, status, code, msg)
}

// resetRequest ends r without a response, abortively: SO_LINGER 0 on the
// TCP connection, so the peer gets an RST rather than a FIN.
//
// On HTTP/1.1 it hijacks and closes the request's connection. Where that
// is impossible (HTTP/2, recorders) the handler is aborted with
// http.ErrAbortHandler, which net/http turns into a reset stream (HTTP/2)
// or a closed connection — unless wholeConn asks for the connection of an
// HTTP/2 request too: then the connection serve recorded in r's context
// (connContext) is closed, and every stream on it fails.
func resetRequest(w http.ResponseWriter, r *http.Request, wholeConn bool) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		abortiveClose(conn)
		return
	}
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok && wholeConn {
		abortiveClose(c)
	}
	panic(http.ErrAbortHandler)
}

// abortiveClose closes conn with SO_LINGER 0 where it is (or wraps) a TCP
// connection.
func abortiveClose(conn net.Conn) {
	raw := conn
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		raw = nc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// connKey keys the connection of a request in its context (connContext).
type connKey struct{}

// connContext is an http.Server's ConnContext: it records each request's
// connection, which a connection-scope reset closes.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	status := http.StatusOK
	select {
	case <-s.closed():
		status = http.StatusServiceUnavailable
	default:
		if f := s.Fault(); f != nil {
			status = f.HealthStatus()
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = w.Write(okBody)
	} else {
		_, _ = w.Write([]byte("unhealthy\n"))
	}
}

// Package lbproxy is `lbchaos proxy`: an HTTP reverse proxy that balances
// with a built-in strategy, both as a proxy under test (the lbchaos:SPEC
// strategies) and as a standalone proxy for a team's own services.
package lbproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/faultyserver/upstream"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// Config configures a Server.
type Config struct {
	Strategy string     // a built-in strategy spec, e.g. "p2c+eject"
	Backends []*url.URL // base URLs; instance ids are their positions
	// Timeout cuts off a request to a backend, body included; 0 = none
	// (the client's cancellation still propagates).
	Timeout time.Duration
	// AccessLog, when set, receives one line per request: the client's
	// X-Vegeta-Seq (or "-"), the instance id (or "-") and the status sent.
	AccessLog io.Writer
	Seed      uint64 // of the strategy's random choices
}

// Server is `lbchaos proxy`: an HTTP reverse proxy that balances with
// a built-in strategy. It streams bodies both ways as they come (no
// buffering of its own), cancels the backend request when the client goes
// away, runs the strategy's active health checks if it has any, and serves
// its state under /_lbchaos/: ready (204 once serving) and stats (per
// backend: requests, errors, in flight, ejected), and the same as
// Prometheus metrics on MetricsPath.
type Server struct {
	cfg Config
	lb  *strategies.Balancer
	bal *transport.Client
	// One upstream client per backend, with its URL and its
	// UpstreamHeader value (shared by every answer, never modified).
	targets   []*url.URL
	upstreams []*upstream.Client
	epHeader  [][]string
	requests  []atomic.Int64
	errors    []atomic.Int64
	latency   []prometheus.Observer // per backend
	metrics   http.Handler
	logMu     sync.Mutex
	log       *bufio.Writer
	stop      context.CancelFunc
	probes    sync.WaitGroup
}

// New builds the proxy; Close stops its health checks and
// flushes its access log.
func New(cfg Config) (*Server, error) {
	if len(cfg.Backends) == 0 {
		return nil, errors.New("no backends: give at least one --backend URL")
	}
	for i, u := range cfg.Backends {
		if u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("backend %d: %q is not an http://host:port URL", i, u)
		}
	}
	lb, err := strategies.New(cfg.Strategy, strategies.Env{
		N:     len(cfg.Backends),
		Clock: strategies.SystemClock{},
		Rand:  rand.New(rand.NewPCG(cfg.Seed, 0x6c62636861)),
	})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Server{
		cfg:      cfg,
		lb:       lb,
		bal:      transport.NewClient([]*strategies.Balancer{lb}, cfg.Backends, cfg.Timeout, 0),
		requests: make([]atomic.Int64, len(cfg.Backends)),
		errors:   make([]atomic.Int64, len(cfg.Backends)),
		stop:     stop,
	}
	p.bal.KeepNoRoutes()
	for i, u := range cfg.Backends {
		p.targets = append(p.targets, u)
		p.upstreams = append(p.upstreams, upstream.New(u.Host))
		p.epHeader = append(p.epHeader, []string{strconv.Itoa(i)})
	}
	p.metrics, p.latency = newMetrics(p)
	if cfg.AccessLog != nil {
		p.log = bufio.NewWriterSize(cfg.AccessLog, 64<<10)
	}
	if pc, ok := lb.Probes(); ok {
		for id := range cfg.Backends {
			p.probes.Go(func() { transport.Probe(ctx, pc, id, p.bal, []*strategies.Balancer{lb}) })
		}
	}
	return p, nil
}

// ServeHTTP proxies r, or answers the admin paths.
func (p *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case ReadyPath:
		w.WriteHeader(http.StatusNoContent)
		return
	case "/_lbchaos/stats":
		p.serveStats(w)
		return
	case MetricsPath:
		p.metrics.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	sw := statusWriter{ResponseWriter: w}
	ep, cut := p.forward(&sw, r)
	status := sw.status
	if status == 0 {
		status = 499 // the client went away before an answer
	}
	if ep >= 0 && ep < len(p.requests) {
		p.requests[ep].Add(1)
		if status >= 500 || status == 499 || cut {
			p.errors[ep].Add(1)
		}
		p.latency[ep].Observe(time.Since(start).Seconds())
	}
	if p.log != nil {
		seq := r.Header.Get(transport.SeqHeader)
		if seq == "" {
			seq = "-"
		}
		inst := "-"
		if ep >= 0 {
			inst = strconv.Itoa(ep)
		}
		p.logMu.Lock()
		fmt.Fprintf(p.log, "%s %s %d\n", seq, inst, status)
		p.logMu.Unlock()
	}
	if cut {
		// The client must see the answer broken, not complete and short.
		panic(http.ErrAbortHandler)
	}
}

// forward sends r to the instance the strategy picks and streams the answer
// back: every chunk read from the backend is written and flushed to the
// client at once. The backend request carries r's context, so a client that
// goes away cancels it. The handler's goroutine writes the request and
// reads the answer itself (upstream.Client): net/http's Transport
// would hand each to a goroutine of its own, two wake-ups more per request
// on a busy machine. forward returns the instance picked (-1: none) and
// whether an answer that had begun was cut short (the backend's body
// failed, or the client went away).
func (p *Server) forward(w *statusWriter, r *http.Request) (ep int, cut bool) {
	var sreq strategies.Request
	if v := r.Header.Get(strategies.KeyHeader); v != "" {
		if k, err := strconv.ParseUint(v, 10, 64); err == nil {
			sreq = strategies.Request{Key: k, HasKey: true}
		}
	}
	c, err := p.bal.Begin(r.Context(), 0, false, sreq)
	ep = c.Instance()
	var resp *http.Response
	if err == nil {
		out := upstream.ProxyRequest(c.Context(), r, p.targets[ep])
		out.Host = p.targets[ep].Host
		resp, err = p.upstreams[ep].RoundTrip(out)
		if err != nil {
			c.Finish(0, "", err)
		}
	}
	if err != nil {
		if ep >= 0 {
			w.Header()[transport.UpstreamHeader] = p.epHeader[ep]
		}
		status := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) {
			status = http.StatusGatewayTimeout
		}
		if r.Context().Err() != nil {
			return ep, false // the client went away; nobody to answer
		}
		w.WriteHeader(status)
		return ep, false
	}
	body := finishBody{rc: resp.Body}
	defer func() {
		_ = resp.Body.Close()
		c.Finish(resp.StatusCode, resp.Header.Get(faultyserver.LoadHeader), body.err)
	}()
	h := w.Header()
	upstream.CopyEndToEnd(h, resp.Header)
	h[transport.UpstreamHeader] = p.epHeader[ep]
	trailers := upstream.TrailerKeys(resp)
	return ep, upstream.SendProxied(w, resp, &body, trailers) != nil
}

// finishBody reads a backend's answer and keeps the first error other than
// its end, which the strategy is told of.
type finishBody struct {
	rc  io.Reader
	err error
}

func (b *finishBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// BackendStats is one backend's line of /_lbchaos/stats.
type BackendStats struct {
	ID       int    `json:"id"`
	URL      string `json:"url"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"` // 5xx answered, backend unreachable, or client gone
	InFlight int64  `json:"in_flight"`
	Ejected  bool   `json:"ejected"`
}

// Stats is the body of /_lbchaos/stats.
type Stats struct {
	Strategy  string         `json:"strategy"`
	Ejections int            `json:"ejections"`
	Backends  []BackendStats `json:"backends"`
}

// stats reads the proxy's counters and the strategy's state, for
// /_lbchaos/stats and the metrics alike.
func (p *Server) stats() Stats {
	inflight := p.lb.InFlight()
	ejected := map[int]bool{}
	for _, id := range p.lb.Ejected() {
		ejected[id] = true
	}
	out := Stats{Strategy: p.lb.Spec(), Ejections: p.lb.Ejections()}
	for id, u := range p.cfg.Backends {
		out.Backends = append(out.Backends, BackendStats{
			ID: id, URL: u.String(), Requests: p.requests[id].Load(), Errors: p.errors[id].Load(),
			InFlight: inflight[id], Ejected: ejected[id],
		})
	}
	return out
}

func (p *Server) serveStats(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(p.stats())
}

// Close stops the health checks, closes idle backend connections and
// flushes the access log.
func (p *Server) Close() error {
	p.stop()
	p.probes.Wait()
	p.bal.Close()
	for _, u := range p.upstreams {
		u.Close()
	}
	if p.log != nil {
		p.logMu.Lock()
		defer p.logMu.Unlock()
		return p.log.Flush()
	}
	return nil
}

// statusWriter records the status written; it passes Flush through so
// that streaming works.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ReadyPath is answered 204 by the proxy itself, without a backend, once it
// accepts requests.
const ReadyPath = "/_lbchaos/ready"

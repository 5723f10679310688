package faultyserver

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
)

// instanceState is what the fake server (Server) and the sidecar (Sidecar)
// share, each embedding one: the instance's identity, its current fault,
// the seeded random source plans draw from, the counters of Stats, the
// load window and the drain signal. admit carries out a plan for either:
// every action kind but ActionServe means the same on both, so a fault is
// written once, as the Action it plans, and works in both; ActionServe is
// the embedder's own (a worker for a Server, a forwarded request for a
// Sidecar).
type instanceState struct {
	// Immutable after init, but for the identity, given once to an
	// Unidentified instance (identity.go).
	identity atomic.Pointer[identity] // replaced once, from Unidentified (identity.go)
	token    string                   // the control API's; "" = open (auth.go)
	sampler  *Sampler                 // a Server's service time; nil for a Sidecar, which plans with PlanProxy
	pool     *pool                    // a Server's workers and queue; nil for a Sidecar
	closed   <-chan struct{}          // closed when the instance closes

	randMu sync.Mutex // guards src, rng and sampler
	src    *rand.PCG  // rng's source, reseeded by Reset
	rng    *rand.Rand

	faultSlot // the current fault

	inFlight                atomic.Int64 // a Sidecar's requests being forwarded
	served, failed, dropped atomic.Int64
	busy                    atomic.Int64 // nanoseconds of worker time, or of forwarding
	window                  *loadWindow  // recent rates and utilization, for load reports
	seqs                    seqLog       // the requests executed, by sequence number (executed.go)
	abandoned               abandoned    // requests kept after their client left (abandon.go)

	stopping  atomic.Bool // set when a shutdown begins, whatever its mode: health answers 503
	drainOnce sync.Once
	drain     chan struct{} // closed when a graceful shutdown begins to finish
}

// init readies s for instance id, its random source seeded from seed, its
// load window's utilization divided by workers (see newLoadWindow) and its
// control API locked by token.
func (s *instanceState) init(id int, seed uint64, token string, workers int, closed <-chan struct{}) {
	s.identity.Store(newIdentity(id, seed))
	s.token = token
	s.closed = closed
	s.src = NewSource(seed)
	s.rng = rand.New(s.src)
	s.window = newLoadWindow(nil, workers)
	s.drain = make(chan struct{})
}

// pcgStream is the second PCG seed word; Config.Seed is the first.
const pcgStream = 0x6c626368616f73 // "lbchaos"

// NewSource returns a fresh random source seeded as a server with
// Config.Seed seed seeds its own. A simulator that samples the service time
// from it and then plans the current fault with it, request by request,
// makes the same choices as that server.
func NewSource(seed uint64) *rand.PCG { return rand.NewPCG(seed, pcgStream) }

// faultSlot holds an instance's current fault; safe for concurrent use.
type faultSlot struct {
	fault atomic.Pointer[faultBox] // nil when none
}

// faultBox is one fault set, with what it does to connections (connfault.go)
// worked out once; gone is closed when another fault, or none, replaces
// it, which wakes the connections waiting under it.
type faultBox struct {
	f    Fault
	conn connEffects
	gone chan struct{}
}

// replace makes b (nil: none) the current fault and wakes whoever waits
// under the one it replaces.
func (s *faultSlot) replace(b *faultBox) {
	if old := s.fault.Swap(b); old != nil {
		close(old.gone)
	}
}

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
	s.replace(&faultBox{f: f, conn: connEffectsOf(f), gone: make(chan struct{})})
	return nil
}

// ClearFault removes the current fault, if any.
func (s *faultSlot) ClearFault() { s.replace(nil) }

// Fault returns the current fault, or nil when there is none.
func (s *faultSlot) Fault() Fault {
	if b := s.fault.Load(); b != nil {
		return b.f
	}
	return nil
}

// checkFault validates f and refuses container faults, which act on a
// container rather than inside a server or sidecar.
func checkFault(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if IsContainerFault(f) {
		return errContainerFault(f)
	}
	if IsNetworkFault(f) {
		return errNetworkFault(f)
	}
	return nil
}

// Stats returns a snapshot of the counters and the current fault. On a
// Sidecar, which has no workers and no queue, Queued is always 0 and
// InFlight counts the requests being forwarded; Served counts answers
// below 400 (the upstream's own) and gRPC answers whose grpc-status is 0,
// Failed every other answer: injected failures, resets, the upstream's
// errors and a 502 (gRPC: UNAVAILABLE) for an unreachable upstream.
func (s *instanceState) Stats() Stats {
	var st Stats
	if s.pool != nil {
		busy, queued := s.pool.counts()
		st.InFlight, st.Queued = int64(busy), int64(queued)
	} else {
		st.InFlight = s.inFlight.Load()
	}
	st.ID = s.ident().num
	st.Served = s.served.Load()
	st.Failed = s.failed.Load()
	st.Dropped = s.dropped.Load()
	st.BusyS = time.Duration(s.busy.Load()).Seconds()
	if f := s.Fault(); f != nil {
		if b, err := MarshalFault(f); err == nil {
			st.Fault = b
		}
	}
	return st
}

// Reset clears the fault, ends the requests kept after their client went
// away (Config.KeepAbandoned), zeroes the served, failed and dropped counters
// and the busy time, forgets the requests executed (ExecutedPath), starts
// the load window afresh and reseeds the random
// source from the configured seed (Config.Seed, SidecarConfig.Seed).
// InFlight and Queued describe requests still in the instance and are
// kept.
func (s *instanceState) Reset() {
	s.ClearFault()
	s.served.Store(0)
	s.failed.Store(0)
	s.dropped.Store(0)
	s.busy.Store(0)
	s.seqs.reset()
	s.abandoned.cancelAll()
	s.window.reset()
	// Reseed, so that the same requests draw the same service times and
	// fault decisions as on a new instance with this configuration.
	s.randMu.Lock()
	s.src.Seed(s.ident().seed, pcgStream)
	s.randMu.Unlock()
}

func (s *instanceState) instanceID() int      { return s.ident().num }
func (s *instanceState) controlToken() string { return s.token }

// beginStop marks the instance as shutting down: from now on its health
// check answers 503, so that balancers and probes take it out while it
// still serves (ShutdownDrain).
func (s *instanceState) beginStop() { s.stopping.Store(true) }

// beginDrain ends hanging requests with 503 so a graceful shutdown need not
// wait for their clients to give up.
func (s *instanceState) beginDrain() { s.drainOnce.Do(func() { close(s.drain) }) }

// load is the number of requests in the instance, for LoadHeader: those
// holding a worker or queued for one (Server), or being forwarded
// (Sidecar).
func (s *instanceState) load() int {
	if s.pool != nil {
		return s.pool.load()
	}
	return int(s.inFlight.Load())
}

// plan captures the current fault and draws the request's fate: a
// Server's from the sampled service time and the fault's Plan, a
// Sidecar's from PlanProxy.
func (s *instanceState) plan() Action {
	f := s.Fault()
	s.randMu.Lock()
	defer s.randMu.Unlock()
	if s.sampler == nil {
		return PlanProxy(f, s.rng)
	}
	base := s.sampler.Sample()
	if f == nil {
		return Action{Kind: ActionServe, Service: base}
	}
	return f.Plan(base, s.rng)
}

// countAnswer counts an answer as served, or with failed as failed.
func (s *instanceState) countAnswer(failed bool) {
	if failed {
		s.failed.Add(1)
	} else {
		s.served.Add(1)
	}
	s.window.answer(failed)
}

// answerer answers one request in its protocol, without counting it: a
// Server's over HTTP (httpAnswer) or gRPC (grpcAnswer), or a Sidecar's
// (sidecarAnswer).
type answerer interface {
	// fail answers with an error carrying load: status for HTTP, code for
	// gRPC (OK meaning UNAVAILABLE).
	fail(load, status int, code codes.Code, msg string)
	// reset ends the request without an answer: its stream, or with
	// wholeConn its connection.
	reset(wholeConn bool)
}

// answerFault answers a request with an error, status for HTTP and code
// for gRPC, carrying load, and counts it as failed.
func answerFault[A answerer](s *instanceState, w A, load, status int, code codes.Code, msg string) {
	s.countAnswer(true)
	w.fail(load, status, code, msg)
}

// admit plans one request and carries out every plan but serving it,
// whatever the instance and protocol; ctx ends when its client goes away.
// It returns the plan and true when the request is to be served, which the
// caller then does; every answer it gives itself carries the load (see
// LoadHeader), a reset carries nothing, and a request whose client went
// away gets no answer. It is generic rather than taking an interface so
// that no answerer is boxed.
func admit[A answerer](ctx context.Context, s *instanceState, w A) (Action, bool) {
	select {
	case <-s.closed:
		answerFault(s, w, s.load(), http.StatusServiceUnavailable, codes.OK, "instance closed")
		return Action{}, false
	default:
	}
	a := s.plan()
	if a.Latency > 0 {
		// On the request's way in: no worker held, no load counted.
		switch sleepUntil(ctx, time.Now().Add(a.Latency), s.closed) {
		case nil:
		case errClosed:
			answerFault(s, w, s.load(), http.StatusServiceUnavailable, codes.OK, "instance closed")
			return Action{}, false
		default:
			s.dropped.Add(1)
			return Action{}, false
		}
	}
	switch a.Kind {
	case ActionFail:
		// A failing request holds no worker, so the load is the
		// instance's as the delay ends. Its delay counts as work in the
		// load report's utilization (not in Stats.BusyS), see loadReport.
		began := time.Now()
		s.window.begin(began)
		err := sleepUntil(ctx, began.Add(a.Delay), s.closed)
		s.window.end(time.Now())
		switch err {
		case nil:
			answerFault(s, w, s.load(), a.Status, a.GRPCCode, "injected fault")
		case errClosed:
			answerFault(s, w, s.load(), http.StatusServiceUnavailable, codes.OK, "instance closed")
		default:
			s.dropped.Add(1)
		}
	case ActionHang:
		select {
		case <-ctx.Done():
			s.dropped.Add(1)
		case <-s.closed:
			answerFault(s, w, s.load(), http.StatusServiceUnavailable, codes.OK, "instance closed")
		case <-s.drain:
			answerFault(s, w, s.load(), http.StatusServiceUnavailable, codes.OK, "instance shutting down")
		}
	case ActionReset:
		s.countAnswer(true)
		w.reset(a.WholeConn)
	default:
		return a, true
	}
	return a, false
}

// healthMethod answers a health check other than GET or HEAD 405 and
// reports whether r is one.
func healthMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

// writeHealth answers a health check with status, its own: "ok" for 200,
// else "unhealthy".
func writeHealth(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = w.Write(okBody)
	} else {
		_, _ = w.Write([]byte("unhealthy\n"))
	}
}

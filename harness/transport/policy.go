package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
)

// AttemptRecord is one attempt of a request sent under a retry or hedge
// policy: where it went and how it ended.
type AttemptRecord struct {
	Instance  int       // the instance picked
	Sent      time.Time // when it was picked
	Latency   time.Duration
	Status    int  // the answer's status; 0: none
	Timeout   bool // ended by its per-try timeout or the request's deadline
	Cancelled bool // given up: another attempt answered first
}

// Success reports whether the attempt got a 2xx answer.
func (a AttemptRecord) Success() bool { return a.Status >= 200 && a.Status < 300 }

// attempt is one attempt in flight: a pick of the strategy, its context
// (cut at the per-try timeout, cancelled with the request) and its
// connection slot.
type attempt struct {
	b       *Client
	lb      *strategies.Balancer
	replica int
	ep      int
	conn    strategies.Conn
	done    func(strategies.Outcome)
	start   time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	slot    chan struct{}
	retry   bool        // sent as a retry: releases its budget place at its end
	hedge   bool        // sent as a hedge
	dropped atomic.Bool // cancelled by the request (another attempt won)
}

// attemptResult is what an attempt's exchange gave.
type attemptResult struct {
	a    *attempt
	resp *http.Response
	err  error
}

// exchange is a request under a policy while its attempts run.
type exchange struct {
	b       *Client
	lb      *strategies.Balancer
	pol     *strategies.Policy
	replica int
	req     *http.Request
	sreq    strategies.Request
	ctx     context.Context // the request's: its deadline spans every attempt
	route   *Route
	results chan attemptResult
	live    []*attempt // attempts in flight
	tried   []int
	sent    int
	// release ends the request's context: when run returns a failure,
	// or when the winning attempt's body ends.
	release func()
}

// roundTripPolicy sends req under lb's retry and hedge policy: each attempt
// is a pick of the strategy whose outcome is reported to it, recorded in
// the route (Route.Attempts). The client's timeout is the whole request's
// deadline, across attempts and backoffs.
func (b *Client) roundTripPolicy(req *http.Request, seq uint64, hasSeq bool, sreq strategies.Request, replica int) (*http.Response, error) {
	lb := b.lbs[replica]
	sreq.NonIdempotent = req.Method == http.MethodPost || req.Method == http.MethodPatch
	x := &exchange{b: b, lb: lb, pol: lb.Policy(), replica: replica, req: req, sreq: sreq,
		route: &Route{Instance: -1, Key: sreq.Key, HasKey: sreq.HasKey, policy: true}, results: make(chan attemptResult, 4)}
	if hasSeq && !b.noRoutes {
		b.routes.put(seq, x.route)
	}
	parent := req.Context()
	var stop func() bool
	if parent.Done() == nil {
		parent = b.abort
	}
	var cancel context.CancelFunc
	if b.timeout > 0 {
		x.ctx, cancel = context.WithTimeout(parent, b.timeout)
	} else {
		x.ctx, cancel = context.WithCancel(parent)
	}
	if parent != b.abort {
		stop = context.AfterFunc(b.abort, cancel)
	}
	x.release = func() {
		if stop != nil {
			stop()
		}
		cancel()
	}
	x.pol.Start()
	resp, err := x.run()
	if resp == nil || resp.Body == http.NoBody {
		x.release() // failed (fail); a winner's body releases it when it ends
	}
	return resp, err
}

// run carries the attempts out and returns the request's answer: the
// winning attempt's response (its body ends that attempt), a failed
// answer with its body already read, or the error of the last attempt.
func (x *exchange) run() (*http.Response, error) {
	if !x.launch(attemptFirst) {
		x.route.Instance = strategies.NoHost
		return nil, ErrNoHost
	}
	var hedgeC <-chan time.Time
	var hedgeDelay time.Duration
	if d, ok := x.pol.HedgeDelay(); ok && x.pol.MaxHedged() > 1 {
		hedgeDelay = d
		t := time.NewTimer(d)
		defer t.Stop()
		hedgeC = t.C
	}
	var (
		retryC  <-chan time.Time
		retryT  *time.Timer
		retries int
		last    attemptResult
	)
	defer func() {
		if retryT != nil && retryT.Stop() {
			x.pol.RetryEnded() // a retry waiting for its backoff, never sent
		}
	}()
	for {
		select {
		case r := <-x.results:
			x.forget(r.a)
			if r.err == nil && !failedStatus(r.resp.StatusCode) {
				return x.win(r), nil
			}
			x.endFailed(r)
			last = r
			if len(x.live) > 0 {
				continue // a hedged attempt may still answer
			}
			if x.ctx.Err() != nil {
				return x.fail(last)
			}
			wait, ok := x.pol.Retry(x.outcome(r), retries, x.sreq)
			if !ok {
				return x.fail(last)
			}
			retries++
			retryT = time.NewTimer(wait)
			retryC = retryT.C
		case <-retryC:
			retryC, retryT = nil, nil
			if !x.launch(attemptRetry) {
				x.pol.RetryEnded()
				return x.fail(last)
			}
		case <-hedgeC:
			hedgeC = nil
			if len(x.live) > 0 && x.sent < x.pol.MaxHedged() && x.launch(attemptHedge) {
				x.pol.Hedged()
				if x.sent < x.pol.MaxHedged() {
					hedgeC = time.After(hedgeDelay)
				}
			}
		case <-x.ctx.Done():
			// The request's deadline, or the run's abort: every attempt in
			// flight ends with it.
			for len(x.live) > 0 {
				r := <-x.results
				x.forget(r.a)
				x.endFailed(r)
				last = r
			}
			if last.a == nil || retryC != nil {
				// Waiting for a retry's backoff: the deadline ends the request.
				last = attemptResult{err: x.ctx.Err()}
			}
			return x.fail(last)
		}
	}
}

// Kinds of attempts.
const (
	attemptFirst = iota
	attemptRetry
	attemptHedge
)

// launch picks and sends a new attempt of kind (attempt*): a hedge, and a
// retry with other_host, avoid the hosts tried. It reports false when the
// strategy allowed no host.
func (x *exchange) launch(kind int) bool {
	sreq := x.sreq
	if kind == attemptHedge || (kind == attemptRetry && x.pol.OtherHost()) {
		sreq.Exclude = x.tried
	}
	ep, conn, done := x.lb.PickOnce(sreq)
	if ep == strategies.NoHost {
		x.lb.End(ep, done, strategies.Outcome{Err: ErrNoHost})
		return false
	}
	a := &attempt{b: x.b, lb: x.lb, replica: x.replica, ep: ep, conn: conn, done: done, start: time.Now(),
		retry: kind == attemptRetry, hedge: kind == attemptHedge}
	x.b.inflight[ep].Add(1)
	if pt := x.pol.PerTryTimeout(); pt > 0 {
		a.ctx, a.cancel = context.WithTimeout(x.ctx, pt)
	} else {
		a.ctx, a.cancel = context.WithCancel(x.ctx)
	}
	x.live = append(x.live, a)
	x.tried = append(x.tried, ep)
	x.sent++
	x.route.Instance = ep
	out := x.req.WithContext(a.ctx)
	u := *x.req.URL
	out.URL = &u
	target := x.b.targets[ep].Load()
	out.URL.Scheme, out.URL.Host, out.Host = target.Scheme, target.Host, target.Host
	if x.req.GetBody != nil && x.sent > 1 {
		if body, err := x.req.GetBody(); err == nil {
			out.Body = body
		}
	}
	go func() {
		resp, err := a.send(out)
		x.results <- attemptResult{a: a, resp: resp, err: err}
	}()
	return true
}

// send waits for a connection slot and sends the attempt.
func (a *attempt) send(out *http.Request) (*http.Response, error) {
	var err error
	if a.slot, err = a.b.waitSlot(a.ctx, a.ep); err != nil {
		return nil, err
	}
	return a.b.roundTrip(out, a.replica, a.ep, a.conn)
}

// forget removes a from the attempts in flight.
func (x *exchange) forget(a *attempt) {
	for i, l := range x.live {
		if l == a {
			x.live = append(x.live[:i], x.live[i+1:]...)
			return
		}
	}
}

// outcome is what the strategy learns of an attempt's exchange.
func (x *exchange) outcome(r attemptResult) strategies.Outcome {
	o := strategies.Outcome{Err: r.err, Latency: time.Since(r.a.start)}
	if r.resp != nil {
		o.Status = r.resp.StatusCode
	}
	if r.err != nil {
		o.Timeout = !x.aborted() && isTimeout(r.a.ctx, r.err)
		o.Cancelled = r.a.dropped.Load()
	}
	return o
}

func (x *exchange) aborted() bool { return x.b.abort.Err() != nil }

// endFailed ends an attempt that failed (or was cancelled): its body, if
// any, is read and closed, and its outcome reported and recorded.
func (x *exchange) endFailed(r attemptResult) {
	if r.resp != nil {
		n, _ := io.Copy(io.Discard, io.LimitReader(r.resp.Body, 1<<20))
		x.route.BytesIn.Add(uint64(n))
		r.resp.Body.Close()
	}
	x.end(r.a, x.outcome(r), loadOf(r.resp))
}

// end reports attempt a's outcome to the strategy and records it.
func (x *exchange) end(a *attempt, o strategies.Outcome, load string) {
	a.cancel()
	x.b.inflight[a.ep].Add(-1)
	if a.slot != nil {
		<-a.slot
	}
	o = withLoad(o, load)
	x.pol.Observe(o)
	x.lb.End(a.ep, a.done, o)
	if a.retry {
		x.pol.RetryEnded()
	}
	x.route.Attempts = append(x.route.Attempts, AttemptRecord{Instance: a.ep, Sent: a.start, Latency: o.Latency,
		Status: o.Status, Timeout: o.Timeout, Cancelled: o.Cancelled})
}

func loadOf(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Header.Get(faultyserver.LoadHeader)
}

// win makes r the request's answer: the other attempts are cancelled and
// ended first, and r's attempt ends when its body does.
func (x *exchange) win(r attemptResult) *http.Response {
	for _, l := range x.live {
		l.dropped.Store(true)
		l.cancel()
	}
	for len(x.live) > 0 {
		o := <-x.results
		x.forget(o.a)
		x.endFailed(o)
	}
	if r.a.hedge {
		x.pol.HedgeWon()
	}
	x.route.Instance = r.a.ep
	r.resp.Body = &doneBody{rc: r.resp.Body, read: &x.route.BytesIn, call: winner{x, r.a}, status: r.resp.StatusCode, load: loadOf(r.resp)}
	return r.resp
}

// fail ends the request with the last attempt's failure: its answer (the
// body already read) or its error.
func (x *exchange) fail(last attemptResult) (*http.Response, error) {
	if last.a != nil {
		x.route.Instance = last.a.ep
	}
	timeout := errors.Is(x.ctx.Err(), context.DeadlineExceeded)
	if x.aborted() {
		x.route.Aborted.Store(true)
	} else if timeout || (last.err != nil && last.a != nil && isTimeout(last.a.ctx, last.err)) {
		x.route.Timeout.Store(true)
	}
	if last.resp != nil && !x.route.Timeout.Load() {
		last.resp.Body = http.NoBody
		return last.resp, nil
	}
	err := last.err
	if err == nil {
		err = x.ctx.Err()
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return nil, err
}

// winner ends the winning attempt when its body ends, and then the
// request.
type winner struct {
	x *exchange
	a *attempt
}

func (w winner) Finish(status int, load string, err error) {
	o := strategies.Outcome{Status: status, Err: err, Latency: time.Since(w.a.start)}
	if err != nil {
		o.Timeout = !w.x.aborted() && isTimeout(w.a.ctx, err)
		if o.Timeout {
			w.x.route.Timeout.Store(true)
		}
	}
	w.x.end(w.a, o, load)
	w.x.release()
}

// failedStatus reports whether an answer's status is a failure of its
// attempt (a 5xx), which a policy may retry or a hedge outlive.
func failedStatus(status int) bool { return status >= 500 }

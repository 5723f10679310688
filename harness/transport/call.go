package transport

import (
	"context"
	"strconv"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// Call is one request between the strategy's pick and its done callback:
// an HTTP round trip (RoundTrip) or any other exchange the caller carries
// out itself (a gRPC call), with the same bookkeeping — the route kept for
// Take, the instance's in-flight count, the request timeout and the run's
// abort, and the outcome reported to the strategy exactly once by Finish.
type Call struct {
	// Immutable after Begin.
	b  *Client
	ep int // the instance picked; -1 for a proxy client
	// replica is the balancer that picked, conn the connection it pinned
	// the request to (Slot -1: none).
	replica int
	conn    strategies.Conn
	start   time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	stop    func() bool // unregisters the abort's AfterFunc; nil: the abort is ctx's parent
	// lb is the strategy that picked and done its report, which report
	// passes to lb.End once; nil lb: a proxy client's call, no report.
	lb   *strategies.Balancer
	done func(strategies.Outcome)
	slot chan struct{} // the instance's connection slot the call holds; nil: none
	// route is the call's Route, kept in the balancer's routes until
	// Take: one allocation for both.
	route Route
}

// Begin picks an instance for a request of sreq whose result has sequence
// number seq (hasSeq false: none, no route is kept). With several
// replicas, replica seq mod K picks. When the strategy allows no instance
// the outcome is already reported and Begin returns ErrNoHost (the route
// is kept, naming no instance); otherwise the caller must call Finish.
func (b *Client) Begin(parent context.Context, seq uint64, hasSeq bool, sreq strategies.Request) (*Call, error) {
	c := &Call{b: b, ep: -1, start: time.Now(), conn: strategies.Conn{Slot: -1}}
	if b.proxy == nil {
		if len(b.lbs) > 1 && hasSeq {
			c.replica = int(seq % uint64(len(b.lbs)))
		}
		c.lb = b.lbs[c.replica]
		c.ep, c.conn, c.done = c.lb.PickOnce(sreq)
	}
	c.route.Instance, c.route.Key, c.route.HasKey = c.ep, sreq.Key, sreq.HasKey
	if hasSeq && !b.noRoutes {
		b.routes.put(seq, &c.route)
	}
	if c.ep == strategies.NoHost && b.proxy == nil {
		c.report(strategies.Outcome{Err: ErrNoHost, Latency: time.Since(c.start)})
		return c, ErrNoHost
	}
	if c.ep >= 0 {
		if n := b.inflight[c.ep].Add(1); b.connCap > 0 && n > int64(b.connCap) {
			b.capHits.Add(1)
		}
	}
	// A parent that is never cancelled (Vegeta's requests carry
	// context.Background) is replaced by the run's abort, which then
	// cancels the call itself, and Finish tells an aborted call by it: no
	// AfterFunc registered and released per call.
	viaAbort := parent.Done() == nil
	if viaAbort {
		parent = b.abort
	}
	if b.timeout > 0 {
		c.ctx, c.cancel = context.WithTimeout(parent, b.timeout)
	} else {
		c.ctx, c.cancel = context.WithCancel(parent)
	}
	if viaAbort {
		return c, nil
	}
	rt, cancel := &c.route, c.cancel
	c.stop = context.AfterFunc(b.abort, func() {
		rt.Aborted.Store(true)
		cancel()
	})
	return c, nil
}

// holdSlot waits for a free connection slot of the call's instance, when
// its connections are bounded (the caller sends over HTTP/1.1), until the
// call's context ends. A proxy client's call (instance -1) holds none.
func (c *Call) holdSlot() error {
	if c.ep < 0 {
		return nil
	}
	var err error
	c.slot, err = c.b.waitSlot(c.ctx, c.ep)
	return err
}

// waitSlot waits until ctx ends for a free connection slot of instance ep,
// when its connections are bounded, and returns it (nil: unbounded).
func (b *Client) waitSlot(ctx context.Context, ep int) (chan struct{}, error) {
	if b.slots == nil {
		return nil, nil
	}
	slot := b.slots[ep]
	select {
	case slot <- struct{}{}:
		return slot, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Instance returns the instance picked (NoHost when none; -1 for a proxy
// client, whose answer names it).
func (c *Call) Instance() int { return c.ep }

// Route returns the call's route.
func (c *Call) Route() *Route { return &c.route }

// Context returns the call's context: the parent's, cut off at the request
// timeout and when the run is interrupted.
func (c *Call) Context() context.Context { return c.ctx }

// Finish ends the call with the answer's status (0 when none arrived), the
// backend's load report (its LoadHeader value; "" when none) and the
// transport error, if any: it releases the context, records a timeout in
// the route and reports the outcome to the strategy. Call it once.
func (c *Call) Finish(status int, load string, err error) {
	if c.stop != nil {
		c.stop()
	} else if c.b.abort.Err() != nil {
		c.route.Aborted.Store(true) // the abort came before the end
	}
	c.cancel()
	if c.ep >= 0 {
		c.b.inflight[c.ep].Add(-1)
	}
	if c.slot != nil {
		<-c.slot
	}
	timeout := err != nil && !c.route.Aborted.Load() && isTimeout(c.ctx, err)
	c.route.Timeout.Store(timeout)
	c.report(withLoad(strategies.Outcome{Status: status, Err: err, Timeout: timeout, Latency: time.Since(c.start)}, load))
}

// withLoad is o with the backend's load report (its LoadHeader value; ""
// when none).
func withLoad(o strategies.Outcome, load string) strategies.Outcome {
	if load != "" {
		if v, err := strconv.ParseFloat(load, 64); err == nil {
			o.Load, o.HasLoad = v, true
		}
	}
	return o
}

// report gives the strategy that picked the call its outcome.
func (c *Call) report(o strategies.Outcome) {
	if c.lb != nil {
		c.lb.End(c.ep, c.done, o)
	}
}

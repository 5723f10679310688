package live

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// checkTiers refuses tiers on backends whose instances cannot call their
// downstream tier: the callers are the engine's own strategies and
// client, run in the instances' handlers, so the servers must run in
// this process.
func checkTiers(exp *experiments.Experiment, p fleet.Provider) error {
	if len(exp.Tiers) == 0 {
		return nil
	}
	if ip, ok := p.(fleet.InProcess); !ok || !ip.InProcess() {
		return fmt.Errorf("tiers: the %s backends cannot call their downstream tier; run tiers on in-process backends (--backends process) or in the simulator (--engine sim)", p.Name())
	}
	return nil
}

// tiers are a tiered attack's callers: for every instance of a tier that
// calls the next one, its balancer and client.
type tiers struct {
	lbs     [][]*strategies.Balancer // by tier, its callers' balancers
	clients []*transport.Client
}

// startTiers gives every instance of a tier with a downstream its caller
// (tierCaller), which records each attempt at its instance in coll.
func startTiers(a *attack, targets []*url.URL) (*tiers, error) {
	exp, name := a.job.Exp, a.job.Name()
	td, ok := a.fl.(fleet.Tiered)
	if !ok {
		return nil, fmt.Errorf("tiers: the %T fleet cannot call a downstream tier", a.fl)
	}
	t := &tiers{lbs: make([][]*strategies.Balancer, len(exp.Tiers))}
	for ti, tier := range exp.Tiers {
		if tier.Calls == 0 {
			continue
		}
		next := exp.Tiers[ti+1]
		down := targets[next.First : next.First+next.Count]
		for id := tier.First; id < tier.First+tier.Count; id++ {
			lb, err := engine.TierBalancer(exp, name, ti, id, strategies.SystemClock{})
			if err != nil {
				t.close()
				return nil, err
			}
			c := transport.NewClient([]*strategies.Balancer{lb}, down, exp.Timeout, 0)
			t.lbs[ti] = append(t.lbs[ti], lb)
			t.clients = append(t.clients, c)
			td.SetDownstream(id, &tierCaller{client: c, calls: tier.Calls, first: next.First, coll: a.coll})
		}
	}
	return t, nil
}

// close stops the callers' calls under way and closes their connections.
func (t *tiers) close() {
	if t == nil {
		return
	}
	for _, c := range t.clients {
		c.Abort()
		c.Close()
	}
}

// tierCaller makes one instance's downstream calls (a
// faultyserver.Downstream): Calls requests, one after another, each
// through the instance's own balancer and its retry or hedge policy,
// every attempt recorded at the instance it went to.
type tierCaller struct {
	client *transport.Client
	calls  int
	first  int // the next tier's first instance id: its endpoint 0
	coll   *engine.Collector
	seq    atomic.Uint64
}

var _ faultyserver.Downstream = (*tierCaller)(nil)

// Call implements faultyserver.Downstream: it stops at the first call
// that fails.
func (t *tierCaller) Call(ctx context.Context) error {
	for range t.calls {
		if err := t.call(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (t *tierCaller) call(ctx context.Context) error {
	seq := t.seq.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://downstream/", nil)
	if err != nil {
		return err
	}
	req.Header[transport.SeqHeader] = []string{strconv.FormatUint(seq, 10)}
	sent := time.Now()
	resp, err := t.client.RoundTrip(req)
	status := 0
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	lat := time.Since(sent)
	ok := err == nil && status >= 200 && status < 300
	if rt, routed := t.client.Take(seq); routed {
		t.record(ctx, rt, ok, lat)
	}
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("downstream answered %d", status)
	}
	return nil
}

// record adds a call's attempts at their instances.
func (t *tierCaller) record(ctx context.Context, rt *transport.Route, ok bool, lat time.Duration) {
	if rt.Policy() {
		for _, at := range rt.Attempts {
			t.coll.AddTierAttempt(engine.Attempt{Instance: t.first + at.Instance, Latency: at.Latency,
				Success: at.Success(), Timeout: at.Timeout, Cancelled: at.Cancelled})
		}
		return
	}
	if rt.Instance < 0 {
		return // no host: the call reached no instance
	}
	t.coll.AddTierAttempt(engine.Attempt{Instance: t.first + rt.Instance, Latency: lat, Success: ok,
		Timeout: rt.Timeout.Load(), Cancelled: !ok && ctx.Err() != nil && !rt.Timeout.Load()})
}

package live

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// measureGRPC measures one strategy with the gRPC load (protocol: grpc)
// on the started fleet fl, whose instances are at targets: the same
// schedule, faults, joins, collector, progress and raw results as the HTTP
// load, with calls instead of requests.
func (e *Engine) measureGRPC(ctx context.Context, job engine.Job, fl fleet.Fleet, targets []*url.URL, conns int, inc *incidents) (m *engine.Measurement, err error) {
	exp, name, opts := job.Exp, job.Name(), e.opts
	events := engine.NewEventLog(time.Now())
	var (
		armed  atomic.Bool // subchannel events are recorded from the start on
		lbs    []*strategies.Balancer
		bal    *transport.Balancer
		client grpcClient
	)
	if strategies.IsGRPC(name) {
		var initial []int
		for id := range exp.Instances.Count {
			if exp.Instances.Instance(id).JoinAt == 0 {
				initial = append(initial, id)
			}
		}
		if client, err = newGRPCPolicyClient(name, exp.Replicas, targets, initial, exp.Timeout, ctx, events, &armed); err != nil {
			return nil, err
		}
	} else {
		if lbs, err = engine.NewBalancers(exp, name, strategies.SystemClock{}, events); err != nil {
			return nil, err
		}
		bal = transport.NewBalancer(lbs, targets, exp.Timeout, conns, ctx)
		defer bal.CloseIdleConnections() // its HTTP transport serves the health probes
		if client, err = newGRPCBuiltinClient(name, bal, len(lbs), targets, exp.Connections); err != nil {
			return nil, err
		}
	}
	defer client.close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	client.connect(cctx)
	cancel()

	var start time.Time // set just before the attack; read by the targeter
	targeter := newTargeter(exp, &start, 0, 1)
	sched := engine.ExperimentSchedule(exp)
	coll := engine.NewCollector(len(targets), exp.Duration, exp.Timeout, exp.SlowThreshold)
	var raw *rawWriter // nil: no raw results kept
	if raw, err = openRaw(opts.RawDir, job); err != nil {
		return nil, err
	}
	defer closeRaw(raw)

	faults := newFaultRunner(fl, exp.Faults, exp.Duration, client.setTarget)
	faults.dead = inc
	if err := faults.applyInitial(ctx); err != nil {
		return nil, err
	}
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()

	attacker := newGRPCAttacker()
	start = time.Now()
	events.SetStart(start)
	inc.begin(start)
	armed.Store(true)
	var faultWG sync.WaitGroup
	var faultStop atomic.Int64 // since start; 0 = none
	faultWG.Go(func() {
		faults.run(faultCtx, start, func(error) {
			faultStop.Store(int64(max(time.Since(start), 1)))
			attacker.Stop()
		})
	})
	faultWG.Go(func() { runJoins(faultCtx, start, exp, lbs, client.setHosts) })
	if bal != nil {
		startProbes(faultCtx, &faultWG, lbs, bal, len(targets))
	}
	poller, err := startLoadPoll(faultCtx, &faultWG, lbs, fl)
	if err != nil {
		stopFaults()
		faultWG.Wait()
		return nil, err
	}
	mc := monitorConfig{start: start, inProcess: inProcess(opts.Provider), inFlight: client.InFlight}
	if bal != nil {
		mc.capHits = bal.CapHits
	}
	mon := startMonitor(mc)
	results := attacker.attack(engine.Until(sched, exp.Duration), exp.Duration+engine.EndGrace, func(seq uint64) *vegeta.Result {
		var t vegeta.Target
		_ = targeter(&t) // never fails
		var sreq strategies.Request
		if v := t.Header.Get(strategies.KeyHeader); v != "" {
			if k, perr := parseKey(v); perr == nil {
				sreq = strategies.Request{Key: k, HasKey: true}
			}
		}
		return client.call(seq, pathOf(t.URL), sreq)
	})

	loop := resultLoop{job: job, every: opts.ProgressEvery, start: start, sched: sched, bal: client, coll: coll, attacker: attacker, mon: mon}
	if raw != nil {
		loop.raw = raw.add
	}
	res := loop.run(ctx, results)
	sent, interrupted := res.sent, res.interrupted
	span := time.Since(start)
	stopFaults()
	faultWG.Wait()
	armed.Store(false)
	if d := time.Duration(faultStop.Load()); interrupted < 0 && d > 0 {
		interrupted = d
	}
	m = &engine.Measurement{Harness: mon.stop(attackTime(exp.Duration, interrupted))}
	if bal != nil {
		m.ConnBound, m.CapHits = conns, bal.CapHits()
	}
	m.Notes = append(m.Notes, grpcNote(name, exp.Connections, exp.Replicas))
	m.Notes = append(m.Notes, poller.note(name)...)
	finish(ctx, m, finished{job: job, rawDir: opts.RawDir, fl: fl, coll: coll, sched: sched, events: events, lbs: lbs,
		start: start, span: span, sent: sent, interrupted: interrupted, raw: raw})
	inc.addTo(m)
	return m, faults.error()
}

// grpcNote says how strategy name's calls travelled.
func grpcNote(name string, connections, replicas int) string {
	if strategies.IsGRPC(name) {
		return fmt.Sprintf("%s: grpc-go's own policy in %d grpc.ClientConn (one per replica), one HTTP/2 connection per instance each; "+
			"its subchannel state changes are the subchannel-* events.", name, max(1, replicas))
	}
	return fmt.Sprintf("%s: gRPC calls, the built-in strategy picking per call; each replica holds %d HTTP/2 connection(s) to each instance.", name, max(1, connections))
}

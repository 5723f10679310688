package live

import (
	"context"
	"fmt"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/reports"
)

// resultLoop reads an attack's results into its collector until the
// attack ends, sweeping the collector and reporting progress every second.
type resultLoop struct {
	job   engine.Job
	every time.Duration // progress lines on job.Log without job.Progress
	start time.Time
	sched engine.Schedule
	load  load // sends the requests; routed them, and stops
	coll  *engine.Collector
	raw   func(*vegeta.Result) // nil: no raw results kept
	// proxy keeps the results no instance was named for, to attribute
	// from the proxy's access log.
	proxy bool
	// byConn, with proxy, also notes which instance answered over each
	// client connection (loopResult.connInstance): a hop that keeps a
	// connection on one instance (a Kubernetes Service) and logs nothing
	// names the instance of a request without an answer by its
	// connection's other answers.
	byConn bool
	// tick, when set, is called every second with the progress.
	tick func(engine.GeneratorProgress)
	// mon, when set, measures the harness; the loop gives it every
	// request's send lag.
	mon *monitor
	// abort, when set, judges the experiment's abort conditions over the
	// results (abort.go).
	abort *engine.AbortWatch
}

type loopResult struct {
	overhead    *overhead           // latency minus the instance's own time
	sent        int64               // every result, aborted ones included
	interrupted time.Duration       // since start; -1 when not interrupted
	unnamed     []engine.SeqOutcome // proxy: results to attribute
	// conns are the client connections of the unnamed results, by
	// sequence number, for a connection-level proxy's log.
	conns map[uint64]transport.ConnRef
	// connInstance, with byConn, is the instance that answered over each
	// client connection (transport.ConnRef.ID).
	connInstance map[uint64]int
	abort        *reports.Abort // the abort condition that stopped the load; nil: none did
}

// run reads results until the channel closes; when ctx is done it aborts
// the requests under way and stops the attack.
func (l *resultLoop) run(ctx context.Context, results <-chan *vegeta.Result) loopResult {
	exp, name, start, coll, bal := l.job.Exp, l.job.Name(), l.start, l.coll, l.load
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	judge, stopJudging := l.judgeTicker()
	defer stopJudging()
	var (
		errs    int64
		lastLog = start
		done    = ctx.Done()
		out     = loopResult{interrupted: -1, conns: map[uint64]transport.ConnRef{}, connInstance: map[uint64]int{}, overhead: newOverhead()}
	)
	for results != nil {
		select {
		case res, ok := <-results:
			if !ok {
				results = nil
				break
			}
			out.sent++
			rt, routed := bal.Take(res.Seq)
			if routed && res.BytesIn == 0 {
				res.BytesIn = rt.BytesIn.Load()
			}
			if l.raw != nil {
				l.raw(res)
			}
			if routed && rt.Aborted.Load() {
				coll.Abort()
				continue
			}
			if routed && rt.ServerTimed.Load() {
				out.overhead.add(res.Latency, rt.ServerUs.Load())
			}
			if due, ok := l.sched.Due(res.Seq); ok {
				sent := res.Timestamp.Sub(start)
				coll.RecordLag(sent - due)
				l.mon.sendLag(sent, sent-due)
			}
			o := classify(res, start, rt, routed)
			if len(exp.Zones) > 0 { // request k's replica is k mod replicas
				o.ClientZone = int32(exp.ReplicaZone(int(res.Seq % uint64(max(1, exp.Replicas)))))
			}
			if routed && rt.Policy() {
				o.Attempts = int32(len(rt.Attempts))
				for _, at := range rt.Attempts {
					coll.AddAttempt(engine.Attempt{Instance: at.Instance, SentAt: at.Sent.Sub(start), Latency: at.Latency,
						Success: at.Success(), Timeout: at.Timeout, Cancelled: at.Cancelled})
				}
			}
			if !o.Success {
				errs++
			}
			if l.abort != nil {
				l.abort.Add(o)
			}
			if l.byConn && o.Instance >= 0 && routed {
				if c, ok := rt.Conn(); ok {
					out.connInstance[c.ID] = o.Instance
				}
			}
			if l.proxy && o.Instance < 0 && routed {
				// Neither the backend nor the proxy named an instance (the
				// client gave up first): the proxy's access log will.
				out.unnamed = append(out.unnamed, engine.SeqOutcome{Seq: res.Seq, Outcome: o})
				if c, ok := rt.Conn(); ok {
					out.conns[res.Seq] = c
				}
				continue
			}
			coll.Add(o)
		case now := <-tick.C:
			coll.Sweep(now.Sub(start))
			if l.tick != nil {
				l.tick(engine.GeneratorProgress{Results: out.sent, Errors: errs, InFlight: bal.InFlight()})
			}
			if l.job.Progress != nil {
				pos, of := l.job.Position()
				l.job.Progress(engine.Progress{Strategy: name, Index: pos, Total: of,
					Elapsed: now.Sub(start), Duration: exp.Duration, Results: out.sent, Errors: errs, InFlight: bal.InFlight()})
			} else if now.Sub(lastLog) >= l.every {
				lastLog = now
				el := now.Sub(start).Truncate(time.Second)
				if el <= exp.Duration {
					fmt.Fprintf(l.job.Log, "      %v/%v: %d results, %.2f%% errors\n", el, exp.Duration, out.sent, 100*ratio(errs, out.sent))
				} else {
					fmt.Fprintf(l.job.Log, "      %v: attack over; %d results, waiting for %d requests still in flight (timeout %v)\n",
						el, out.sent, bal.InFlight(), exp.Timeout)
				}
			}
		case now := <-judge:
			if l.judge(now, &out) {
				stopJudging()
				judge = nil
				if out.abort != nil {
					done = nil // stopped already
				}
			}
		case <-done:
			done = nil
			out.interrupted = time.Since(start)
			bal.Abort()
			bal.Stop()
		}
	}
	return out
}

// classify turns a Vegeta result and its route into an outcome.
func classify(res *vegeta.Result, start time.Time, rt *transport.Route, routed bool) engine.Outcome {
	o := engine.Outcome{
		Instance: -1,
		SentAt:   res.Timestamp.Sub(start),
		Latency:  res.Latency,
		Success:  res.Code >= 200 && res.Code < 300 && res.Error == "",
	}
	if routed {
		o.Instance = rt.Instance
		o.Timeout = rt.Timeout.Load()
		o.Key, o.HasKey = rt.Key, rt.HasKey
	}
	return o
}

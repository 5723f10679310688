package live

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// An attack is one strategy's attack, from its faults armed to its
// measurement: the lifecycle every kind of load shares, written once. A
// kind of load supplies only what differs (load). A single process runs it
// whole (Measure: run, then measure); a generator of a distributed run
// runs it without a fleet and streams what it collected (Generate); the
// coordinator of a distributed run arms the faults and runs the background
// while its generators send the load (measureSpread).
type attack struct {
	job    engine.Job
	fl     fleet.Fleet // nil: a generator's, which plays no faults
	inc    *incidents  // nil: a generator's
	rawDir string      // "" when no raw results are kept
	events *engine.EventLog
	lbs    []*strategies.Balancer // a built-in strategy's replicas; nil for a proxy or a gRPC policy
	proxy  *proxies.Proxy         // the proxy under test when it runs here
	// proxied: the requests go to a proxy under test, whose access log
	// names the instance of those no answer named.
	proxied bool
	// service: the proxy is a Kubernetes Service (kube:service), which
	// logs nothing: a request without an answer is attributed by its
	// connection's other answers.
	service bool
	load    load // nil for a coordinator
	coll    *engine.Collector
	sched   engine.Schedule
	raw     *rawWriter // nil: no raw results kept
	faults  *faultRunner
	// start is the attack's start: set by begin, unless given before (a
	// distributed run's shared start).
	start time.Time
	// armed is set from the start to the end of the load: a gRPC policy's
	// subchannel events are recorded only then.
	armed atomic.Bool
	// every is the interval of progress lines on job.Log without
	// job.Progress; tick, when set, is told the progress every second;
	// watch measures the harness itself (monitor.go), whose backends run
	// in this process when inProcess.
	every     time.Duration
	tick      func(engine.GeneratorProgress)
	watch     bool
	inProcess bool
}

// close releases what the attack started: raw results, load, proxy.
func (a *attack) close() {
	closeRaw(a.raw)
	if a.load != nil {
		a.load.close()
	}
	if a.proxy != nil {
		a.proxy.Close()
	}
}

// arm applies the faults due at 0, before the attack starts.
func (a *attack) arm(ctx context.Context) error {
	exp, faults := a.job.Exp, a.job.Exp.Faults
	if a.fl == nil {
		faults = nil // a generator's: its coordinator plays them
	}
	var moved func(int, *url.URL)
	if a.load != nil {
		moved = a.load.moved
	}
	a.faults = newFaultRunner(a.fl, exp, faults, moved)
	a.faults.dead = a.inc
	return a.faults.applyInitial(ctx)
}

// background is what runs beside the load: the fault schedule, the
// instances joining, the strategy's health probes and its load polling.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	poller *loadPoller // nil: no load polled
	// stopped is when a fault that could not be applied stopped the
	// attack, since the start; 0: none did.
	stopped atomic.Int64
}

// begin sets the start (now, unless set) and starts the background from
// it, until ctx is done or end; a fault that cannot be applied calls stop.
func (a *attack) begin(ctx context.Context, stop func()) (*background, error) {
	if a.start.IsZero() {
		a.start = time.Now()
	}
	start, exp := a.start, a.job.Exp
	if a.events != nil {
		a.events.SetStart(start)
	}
	if a.inc != nil {
		a.inc.begin(start)
	}
	a.armed.Store(true)
	bctx, cancel := context.WithCancel(ctx)
	bg := &background{cancel: cancel}
	bg.wg.Go(func() {
		a.faults.run(bctx, start, func(error) {
			bg.stopped.Store(int64(max(time.Since(start), 1)))
			stop()
		})
	})
	var setHosts func([]int)
	var client *transport.Client
	if a.load != nil {
		setHosts, client = a.load.setHosts, a.load.client()
	}
	bg.wg.Go(func() { runJoins(bctx, start, exp, a.lbs, setHosts) })
	if a.fl != nil && a.inc != nil {
		bg.wg.Go(func() { runRollout(bctx, a.fl, exp, start, a.inc) })
	}
	startProbes(bctx, &bg.wg, a.lbs, client, exp.Instances.Count)
	if a.fl != nil {
		p, err := startLoadPoll(bctx, &bg.wg, a.lbs, a.fl)
		if err != nil {
			bg.end()
			return nil, err
		}
		bg.poller = p
	}
	return bg, nil
}

// end stops the background and waits for it; it returns when a fault
// that could not be applied stopped the attack (since the start; 0: none).
func (b *background) end() time.Duration {
	b.cancel()
	b.wg.Wait()
	return time.Duration(b.stopped.Load())
}

// ran is what a load left to be measured.
type ran struct {
	loopResult
	span    time.Duration // from the start until the last request ended
	poller  *loadPoller
	harness *reports.Harness // nil when the harness was not watched
	// abortNotes say what the abort healed (r.abort set).
	abortNotes []string
}

// run plays the attack in this process: the faults due at 0 applied, the
// load sent from the start with the background beside it, every result
// collected until the load ends or ctx is done, and everything it started
// stopped. A fault that cannot be applied ends the load where it stands,
// as an interruption.
func (a *attack) run(ctx context.Context) (ran, error) {
	exp := a.job.Exp
	if err := a.arm(ctx); err != nil {
		return ran{}, err
	}
	bg, err := a.begin(ctx, func() { a.load.Stop() })
	if err != nil {
		return ran{}, err
	}
	var mon *monitor
	if a.watch {
		mc := monitorConfig{start: a.start, inProcess: a.inProcess, inFlight: a.load.InFlight}
		if c := a.load.client(); c != nil {
			mc.capHits = c.CapHits
		}
		mon = startMonitor(mc)
	}
	loop := resultLoop{job: a.job, every: a.every, start: a.start, sched: a.sched, load: a.load, coll: a.coll, proxy: a.proxied, byConn: a.service, tick: a.tick, mon: mon}
	if a.raw != nil {
		loop.raw = a.raw.add
	}
	if a.fl != nil { // a generator's abort is its coordinator's (checkAbort)
		loop.abort = engine.NewAbortWatch(exp, a.job.Name())
	}
	r := ran{loopResult: loop.run(ctx, a.load.send(engine.Until(a.sched, exp.Duration), exp.Duration+engine.EndGrace)), poller: bg.poller}
	r.span = time.Since(a.start)
	if d := bg.end(); r.interrupted < 0 && d > 0 {
		r.interrupted = d
	}
	// The load is over: stop the schedule's rate and the harness monitor
	// before healing, which may take a while, is not part of the attack.
	a.armed.Store(false)
	if mon != nil {
		r.harness = mon.stop(attackTime(exp.Duration, r.interrupted))
	}
	if r.abort != nil {
		r.abortNotes = a.healAfterAbort(ctx, r.abort)
	}
	return r, nil
}

// measure turns what a single process's run collected into the
// strategy's measurement; conns is the client's connection bound.
func (a *attack) measure(ctx context.Context, r ran, conns int) *engine.Measurement {
	name := a.job.Name()
	m := &engine.Measurement{Harness: r.harness, Notes: a.load.notes()}
	c := a.load.client()
	if c != nil {
		m.ConnBound, m.CapHits = conns, c.CapHits()
	}
	m.Notes = append(m.Notes, r.poller.note(name)...)
	var attempts map[int]int64
	if a.proxy != nil {
		c.CloseIdleConnections() // a connection-level proxy logs a connection when it closes
		var notes []string
		notes, attempts = attributeProxy(a.proxy, name, r.unnamed, r.conns, a.coll)
		m.Notes = append(m.Notes, notes...)
	}
	a.finish(ctx, m, r)
	m.Abort = r.abort
	m.Notes = append(m.Notes, r.abortNotes...)
	if spec, err := strategies.ParseGRPC(name); a.proxy != nil || (err == nil && spec.Retry != nil) {
		// A proxy's or grpc-go's retries are picks the client does not
		// see: attempts only as the proxy's log (or, below, the
		// instances) count them.
		setAttempts(&m.Strategy, attempts)
		m.Strategy.AttemptsPerRequest = nil
	}
	if a.proxy == nil {
		m.Strategy.TransportOverheadMs = r.overhead.summary()
	}
	a.inc.addTo(m)
	a.setExecutions(ctx, m, attempts != nil) // before the instances are reset for the next strategy
	return m
}

// finish closes the collector and fills m with what was measured: the
// strategy's results, counts, ejections, events and (for an attack that
// ran to its end) the instances' utilization; with raw results kept, it
// writes the histogram log too.
func (a *attack) finish(ctx context.Context, m *engine.Measurement, r ran) {
	exp, name := a.job.Exp, a.job.Name()
	a.coll.Finish()
	elapsed := attackTime(exp.Duration, r.interrupted)
	if note := a.raw.note(name, a.start); note != "" {
		m.Notes = append(m.Notes, note)
	}
	if a.rawDir != "" {
		if err := writeHDRLog(a.rawDir, a.job, a.coll, a.start, a.start.Add(elapsed)); err != nil {
			m.Notes = append(m.Notes, fmt.Sprintf("%s: histogram log not written: %v", name, err))
		}
	}
	m.Strategy = a.coll.Strategy(name, exp.FaultyInstances())
	m.Sent, m.Scheduled, m.Elapsed, m.Interrupted = r.sent, a.sched.Count(elapsed), elapsed, r.interrupted >= 0
	m.Ejections = engine.Ejections(a.lbs)
	m.Retry = engine.PolicyStats(a.lbs)
	m.Events, m.EventDrops = a.events.Sorted()
	m.Aborted, m.Unattributed = a.coll.Aborted(), a.coll.Unattributed()
	if r.interrupted < 0 {
		setUtilization(ctx, a.fl, exp, m, r.span)
	}
}

// attributeProxy stops the proxy under test, attributes the results no
// instance was named for from its access log, adds them to coll and
// returns the notes on the proxy and, when its log lists every upstream
// tried (nginx), the attempts per instance (nil otherwise).
func attributeProxy(proxy *proxies.Proxy, name string, unnamed []engine.SeqOutcome, conns map[uint64]transport.ConnRef, coll *engine.Collector) ([]string, map[int]int64) {
	var notes []string
	proxy.Stop() // flushes its access log
	if proxy.ConnLevel() {
		return attributeConns(proxy, name, unnamed, conns, coll), nil
	}
	var attempts map[int]int64
	if proxy.AttemptsLogged() {
		var err error
		if attempts, err = proxy.Attempts(); err != nil {
			attempts = nil
			notes = append(notes, fmt.Sprintf("%s: the proxy's access log could not be read (%v); its attempts per instance are not counted.", name, err))
		}
	}
	names, aerr := proxy.Attribution()
	if aerr != nil {
		notes = append(notes, fmt.Sprintf("%s: the proxy's access log could not be read (%v); %d requests without an answer stay unattributed.", name, aerr, len(unnamed)))
	}
	for _, u := range unnamed {
		if id, ok := names[u.Seq]; ok {
			u.Outcome.Instance = id
		}
		coll.Add(u.Outcome)
	}
	return append(notes, fmt.Sprintf("%s: a real %s between the load generator and the backends; its own ejections and health checks are not observed, and its latency includes the extra hop.", name, proxy.Kind())), attempts
}

// setAttempts sets each instance's Attempts of a proxy strategy from
// attempts (by instance id); nil attempts (not observed) clears them: the
// collector counts the answers, which say nothing of a proxy's retries.
func setAttempts(st *reports.Strategy, attempts map[int]int64) {
	for i := range st.Instances {
		if attempts == nil {
			st.Instances[i].Attempts = nil
			continue
		}
		n := attempts[st.Instances[i].ID]
		st.Instances[i].Attempts = &n
	}
}

// Package live is the real engine: Vegeta's open-loop load, through the
// balancing transport and the strategy under test (or a real proxy), to
// real HTTP backends that a fleet.Provider starts, with the fault schedule
// played on them through their control API or their container runtime.
package live

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Options configure the real engine. The zero value runs in-process
// backends.
type Options struct {
	// Provider starts the backends; nil means process.Provider.
	Provider fleet.Provider
	// MaxConnsPerInstance bounds the client's connections to one instance;
	// 0 derives it from the open-file limit.
	MaxConnsPerInstance int
	// ProgressEvery is the interval of progress lines on the job's Log when
	// it has no Progress callback (default 5 s).
	ProgressEvery time.Duration
	// RawDir, when set, receives each strategy's raw data in the
	// strategy's directory (reports.StrategyDirs): every result in
	// Vegeta's encoding, zstd-compressed (reports.ResultsFile, readable by
	// `vegeta report` and `vegeta plot` once decompressed) and its latency
	// histograms as an HdrHistogram log (reports.HDRLogFile).
	RawDir string
	// LbchaosBinary is the lbchaos executable that "lbchaos:..." proxy
	// strategies run as `lbchaos proxy`, and that a distributed run
	// (generators > 1) runs as its generators, `lbchaos generate`; the
	// command sets it to itself.
	LbchaosBinary string
	// GeneratorLead is how long after launching its generators a
	// distributed run starts (default DefaultGeneratorLead), when they
	// are local processes (Launcher nil).
	GeneratorLead time.Duration
	// Launcher starts a distributed run's generators (generators > 1);
	// nil runs them as local processes of LbchaosBinary (LocalLauncher).
	Launcher engine.Launcher
}

// Engine is the real engine.
type Engine struct {
	opts      Options
	fileLimit uint64 // the open-file limit, raised once by New
}

var _ engine.Engine = (*Engine)(nil)

// New returns a real engine with opts. It raises the process's open-file
// limit as far as it may.
func New(opts Options) *Engine {
	if opts.Provider == nil {
		opts.Provider = process.Provider{}
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 5 * time.Second
	}
	return &Engine{opts: opts, fileLimit: RaiseFileLimit()}
}

// Info implements engine.Engine.
func (e *Engine) Info() engine.Info {
	return engine.Info{Engine: "real", Backends: e.opts.Provider.Name()}
}

// Check implements engine.Engine: the provider must take exp's faults, and
// every proxy strategy must be runnable. External instances get a note,
// and each file strategy (nginx:file, haproxy:file) one naming its file.
func (e *Engine) Check(exp *experiments.Experiment) ([]string, error) {
	if err := fleet.Check(exp, e.opts.Provider); err != nil {
		return nil, err
	}
	if err := checkGenerators(exp, e.launcher()); err != nil {
		return nil, err
	}
	if err := checkProxies(exp, e.opts.LbchaosBinary); err != nil {
		return nil, err
	}
	if err := checkGRPC(exp); err != nil {
		return nil, err
	}
	if err := checkLoadPolling(exp); err != nil {
		return nil, err
	}
	var notes []string
	if len(exp.Instances.External) > 0 {
		notes = append(notes, "The instances are external: they serve load as they are, and the experiment's workers, queue limit and service time "+
			"(if given) describe only the simulator's model of them; no utilization is measured.")
	}
	if app := exp.Instances.App; app != nil {
		fresh := "kept running from one strategy to the next (only the sidecar is reset, and paused, throttled or killed containers are brought back)"
		if app.Restart {
			fresh = "restarted before each strategy"
		}
		notes = append(notes, fmt.Sprintf("The instances are your image %s, each behind an lbchaos sidecar that applies the server faults; its containers are %s. "+
			"The experiment's service time (if given) is only the simulator's model of it; no utilization is measured.", app.Image, fresh))
		if app.PortEnv == "" {
			notes = append(notes, fmt.Sprintf("instances.app has a fixed port (%d) and no port_env: each app runs on the engine's bridge network with that port published on 127.0.0.1, "+
				"and its sidecar reaches it through the engine's port forwarding, whose userland proxy (docker-proxy) adds latency and CPU to every request; "+
				"give port_env to run the apps in the host's network namespace instead.", app.Port))
		}
	}
	for _, name := range exp.Strategies {
		if file, ok := exp.ProxyFiles[name]; ok {
			notes = append(notes, fmt.Sprintf("%s: the balancing section is %s, with the servers written at %s.", name, file, proxies.Placeholder))
		}
	}
	return notes, nil
}

// checkProxies rejects, before anything starts, proxy strategies the
// experiment cannot run: a proxy's configuration is written once per
// strategy, so instances that join later or move (a killed container's new
// port) would not reach it, and a proxy is one balancer, not replicas. It
// also checks that each proxy is installed and that a file spec's file
// (nginx:file, haproxy:file) is a section lbchaos can complete.
func checkProxies(exp *experiments.Experiment, lbchaos string) error {
	for i, name := range exp.Strategies {
		if !proxyspec.IsProxy(name) {
			continue
		}
		ps, err := proxyspec.Parse(name)
		if err != nil {
			return fmt.Errorf("strategies[%d]: %w", i, err)
		}
		if err := checkProxyClient(exp, name, ps); err != nil {
			return err
		}
		switch {
		case exp.Replicas > 1:
			return fmt.Errorf("strategy %s: replicas (%d) apply to built-in strategies; a proxy is one balancer", name, exp.Replicas)
		case len(exp.Instances.Joining()) > 0:
			return fmt.Errorf("strategy %s: instances that join during the run cannot reach a proxy whose configuration is written at the start", name)
		}
		for _, f := range exp.Faults {
			if c, ok := f.Spec.(faultyserver.ContainerFault); ok && c.Relocates() {
				return fmt.Errorf("strategy %s: mode %q brings the instance back on a new address, which a proxy's configuration does not follow; run it with built-in strategies", name, f.Spec.Mode())
			}
		}
		if err := proxies.Check(name, exp.ProxyFiles[name], lbchaos); err != nil {
			return fmt.Errorf("strategy %s: %w", name, err)
		}
	}
	return nil
}

// Measure implements engine.Engine: one strategy against a fresh fleet.
// With exp.Generators > 1 this process is the coordinator: it runs the
// fleet and the faults, and the load comes from its generators
// (measureSpread).
func (e *Engine) Measure(ctx context.Context, job engine.Job) (m *engine.Measurement, err error) {
	exp, name, opts := job.Exp, job.Name(), e.opts
	defer lessGC()()
	conns := opts.MaxConnsPerInstance
	if conns == 0 {
		conns = connsPerInstance(e.fileLimit, exp.Instances.Count, opts.Provider)
	}
	fl, err := opts.Provider.Start(ctx, fleet.Spec{Instances: exp.Instances, Seed: exp.Seed})
	if err != nil {
		return nil, fmt.Errorf("start %s backends: %w", opts.Provider.Name(), err)
	}
	defer fl.Close()
	backends := fl.Backends()
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fleet.Healthy(hctx, b)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("instance %d at %s is not healthy: %w", b.ID, b.URL, err)
		}
		targets[i] = b.URL
	}
	inc := watchIncidents(fl, job)
	defer inc.stop()
	if exp.Protocol == experiments.ProtocolGRPC {
		return e.measureGRPC(ctx, job, fl, targets, conns, inc)
	}
	if exp.Generators > 1 {
		return e.measureSpread(ctx, job, fl, targets, conns, inc)
	}

	events := engine.NewEventLog(time.Now())
	var (
		lbs   []*strategies.Balancer
		bal   *transport.Balancer
		proxy *proxies.Proxy
	)
	if proxyspec.IsProxy(name) {
		if proxy, err = proxies.Start(ctx, name, exp.ProxyFiles[name], targets, exp.Timeout, opts.LbchaosBinary, exp.Seed); err != nil {
			return nil, err
		}
		defer proxy.Close()
		inc.watchProxy(proxy)
		bal = transport.NewProxyClient(proxy.URL(), proxy.InstanceOf, len(backends), exp.Timeout, proxyClientConns(exp, conns, len(backends)), ctx, protocolOptions(exp)...)
	} else {
		if lbs, err = engine.NewBalancers(exp, name, strategies.SystemClock{}, events); err != nil {
			return nil, err
		}
		bal = transport.NewBalancer(lbs, targets, exp.Timeout, conns, ctx, protocolOptions(exp)...)
	}
	defer bal.CloseIdleConnections()
	attacker := newAttacker(bal, exp.PeakRate())
	var start time.Time // set just before the attack; read by the targeter
	targeter := newTargeter(exp, &start, 0, 1)
	sched := engine.ExperimentSchedule(exp)
	coll := engine.NewCollector(len(backends), exp.Duration, exp.Timeout, exp.SlowThreshold)

	var raw *rawWriter // nil: no raw results kept
	if raw, err = openRaw(opts.RawDir, job); err != nil {
		return nil, err
	}
	defer closeRaw(raw)

	faults := newFaultRunner(fl, exp.Faults, exp.Duration, bal.SetTarget)
	faults.dead = inc
	if err := faults.applyInitial(ctx); err != nil {
		return nil, err
	}
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()

	start = time.Now()
	events.SetStart(start)
	inc.begin(start)
	var faultWG sync.WaitGroup
	// A fault that cannot be applied ends the attack where it stands.
	var faultStop atomic.Int64 // since start; 0 = none
	faultWG.Go(func() {
		faults.run(faultCtx, start, func(error) {
			faultStop.Store(int64(max(time.Since(start), 1)))
			attacker.Stop()
		})
	})
	faultWG.Go(func() { runJoins(faultCtx, start, exp, lbs, nil) })
	startProbes(faultCtx, &faultWG, lbs, bal, len(backends))
	poller, err := startLoadPoll(faultCtx, &faultWG, lbs, fl)
	if err != nil {
		stopFaults()
		faultWG.Wait()
		return nil, err
	}
	mon := startMonitor(monitorConfig{start: start, inProcess: inProcess(opts.Provider), capHits: bal.CapHits, inFlight: bal.InFlight})
	results := attacker.Attack(targeter, engine.Until(sched, exp.Duration), exp.Duration+engine.EndGrace, name)

	loop := resultLoop{job: job, every: opts.ProgressEvery, start: start, sched: sched, bal: bal, coll: coll, attacker: attacker, proxy: proxy != nil, mon: mon}
	if raw != nil {
		loop.raw = raw.add
	}
	res := loop.run(ctx, results)
	sent, interrupted, unnamed := res.sent, res.interrupted, res.unnamed
	span := time.Since(start) // until the last request ended
	stopFaults()
	faultWG.Wait()
	if d := time.Duration(faultStop.Load()); interrupted < 0 && d > 0 {
		interrupted = d
	}
	m = &engine.Measurement{ConnBound: conns, CapHits: bal.CapHits(), Notes: poller.note(name)}
	m.Harness = mon.stop(attackTime(exp.Duration, interrupted))
	var attempts map[int]int64
	if proxy != nil {
		bal.CloseIdleConnections() // a connection-level proxy logs a connection when it closes
		var notes []string
		notes, attempts = attributeProxy(proxy, name, unnamed, res.conns, coll)
		m.Notes = append(m.Notes, notes...)
	}
	finish(ctx, m, finished{job: job, rawDir: opts.RawDir, fl: fl, coll: coll, sched: sched, events: events, lbs: lbs,
		start: start, span: span, sent: sent, interrupted: interrupted, raw: raw})
	setAttempts(&m.Strategy, attempts)
	if proxy == nil {
		m.Strategy.TransportOverheadMs = res.overhead.summary()
	}
	inc.addTo(m)
	return m, faults.error()
}

// finished is what a single-process attack of one strategy leaves to be
// put into its measurement.
type finished struct {
	job         engine.Job
	rawDir      string // "" when no raw results are kept
	fl          fleet.Fleet
	coll        *engine.Collector
	sched       engine.Schedule
	events      *engine.EventLog
	lbs         []*strategies.Balancer // none for a proxy or a gRPC policy
	start       time.Time
	span        time.Duration // until the last request ended
	sent        int64
	interrupted time.Duration // since start; -1 when not interrupted
	raw         *rawWriter    // nil when no raw results are kept
}

// finish closes f's collector and fills m with what was measured: the
// strategy's results, counts, ejections, events and (for an attack that
// ran to its end) the instances' utilization; with raw results kept, it
// writes the histogram log too.
func finish(ctx context.Context, m *engine.Measurement, f finished) {
	exp, name := f.job.Exp, f.job.Name()
	f.coll.Finish()
	elapsed := attackTime(exp.Duration, f.interrupted)
	if note := f.raw.note(name, f.start); note != "" {
		m.Notes = append(m.Notes, note)
	}
	if f.rawDir != "" {
		if err := writeHDRLog(f.rawDir, f.job, f.coll, f.start, f.start.Add(elapsed)); err != nil {
			m.Notes = append(m.Notes, fmt.Sprintf("%s: histogram log not written: %v", name, err))
		}
	}
	m.Strategy = f.coll.Strategy(name, exp.FaultyInstances())
	m.Sent, m.Scheduled, m.Elapsed, m.Interrupted = f.sent, f.sched.Count(elapsed), elapsed, f.interrupted >= 0
	m.Ejections = engine.Ejections(f.lbs)
	m.Events, m.EventDrops = f.events.Sorted()
	m.Aborted, m.Unattributed = f.coll.Aborted(), f.coll.Unattributed()
	if f.interrupted < 0 {
		setUtilization(ctx, f.fl, exp, m, f.span)
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

// setAttempts sets each instance's Attempts from attempts (by instance
// id); nothing when attempts is nil (not observed).
func setAttempts(st *reports.Strategy, attempts map[int]int64) {
	if attempts == nil {
		return
	}
	for i := range st.Instances {
		n := attempts[st.Instances[i].ID]
		st.Instances[i].Attempts = &n
	}
}

// newAttacker returns the Vegeta attacker of a load of rate requests per
// second through bal.
func newAttacker(bal *transport.Balancer, rate float64) *vegeta.Attacker {
	client := &http.Client{
		Transport: bal, // applies the request timeout itself
		Timeout:   0,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return vegeta.NewAttacker(
		vegeta.Client(client),
		vegeta.Workers(uint64(max(10, min(rate/20, 1000)))),
		// Keep no body in the results, yet read every body to its end
		// (Vegeta discards what is past MaxBody), so that a service's cost
		// of sending it is real: TestRunTargetsFile checks it.
		vegeta.MaxBody(0),
	)
}

// startProbes starts a built-in strategy's active health checks of the
// instances, in wg until ctx is done; a proxy under test (no lbs) probes
// its backends itself, if configured to.
func startProbes(ctx context.Context, wg *sync.WaitGroup, lbs []*strategies.Balancer, bal *transport.Balancer, instances int) {
	if len(lbs) == 0 {
		return
	}
	if pc, ok := lbs[0].Probes(); ok {
		for id := range instances {
			wg.Go(func() { transport.Probe(ctx, pc, id, bal, lbs) })
		}
	}
}

// setUtilization sets the instances' utilization in m from their servers'
// busy time over span. External instances' and an app's workers are the
// simulator's model, not theirs: no utilization.
func setUtilization(ctx context.Context, fl fleet.Fleet, exp *experiments.Experiment, m *engine.Measurement, span time.Duration) {
	if exp.Instances.Foreign() {
		return
	}
	for _, b := range fl.Backends() {
		if b.Control == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		if stats, err := b.Control.Stats(sctx); err == nil {
			engine.SetUtilization(&m.Strategy.Instances[b.ID], stats.BusyS, exp.Instances.Instance(b.ID).Workers, span)
		}
		cancel()
	}
}

// resultLoop reads an attack's results into its collector until the
// attack ends, sweeping the collector and reporting progress every second.
type resultLoop struct {
	job      engine.Job
	every    time.Duration // progress lines on job.Log without job.Progress
	start    time.Time
	sched    engine.Schedule
	bal      router // the HTTP balancing transport or the gRPC clients
	coll     *engine.Collector
	attacker stopper
	raw      func(*vegeta.Result) // nil: no raw results kept
	// proxy keeps the results no instance was named for, to attribute
	// from the proxy's access log.
	proxy bool
	// tick, when set, is called every second with the progress.
	tick func(engine.GeneratorProgress)
	// mon, when set, measures the harness; the loop gives it every
	// request's send lag.
	mon *monitor
}

type loopResult struct {
	overhead    *overhead           // latency minus the instance's own time
	sent        int64               // every result, aborted ones included
	interrupted time.Duration       // since start; -1 when not interrupted
	unnamed     []engine.SeqOutcome // proxy: results to attribute
	// conns are the client connections of the unnamed results, by
	// sequence number, for a connection-level proxy's log.
	conns map[uint64]transport.ConnRef
}

// run reads results until the channel closes; when ctx is done it stops
// the attack.
func (l *resultLoop) run(ctx context.Context, results <-chan *vegeta.Result) loopResult {
	exp, name, start, coll, bal := l.job.Exp, l.job.Name(), l.start, l.coll, l.bal
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var (
		errs    int64
		lastLog = start
		done    = ctx.Done()
		out     = loopResult{interrupted: -1, conns: map[uint64]transport.ConnRef{}, overhead: newOverhead()}
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
			if !o.Success {
				errs++
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
		case <-done:
			done = nil
			out.interrupted = time.Since(start)
			l.attacker.Stop()
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

// proxyConns bounds the client's connections to a proxy under test: the
// open-file budget connsPerInstance shares out per instance, at most 9000
// (the generated proxy configurations take 9000 requests at once).
func proxyConns(perInstance, instances int) int {
	return max(64, min(9000, perInstance*instances))
}

// runJoins adds the joining instances to every balancer's host set at their
// time, and hands each new host set to also (when not nil), until ctx is
// done.
func runJoins(ctx context.Context, start time.Time, exp *experiments.Experiment, lbs []*strategies.Balancer, also func(hosts []int)) {
	at, hosts := engine.JoinSteps(exp)
	for i, t := range at {
		timer := time.NewTimer(time.Until(start.Add(t)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		for _, lb := range lbs {
			_ = lb.SetHosts(hosts[i]) // validated by construction
		}
		if also != nil {
			also(hosts[i])
		}
	}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// attackTime is how long the attack sent requests: its duration, or until it
// was interrupted (interrupted < 0: it was not).
func attackTime(duration, interrupted time.Duration) time.Duration {
	if interrupted >= 0 && interrupted < duration {
		return interrupted
	}
	return duration
}

// inProcess reports whether p's backends run inside this process.
func inProcess(p fleet.Provider) bool {
	ip, ok := p.(fleet.InProcess)
	return ok && ip.InProcess()
}

// connsPerInstance bounds connections per instance so that a queue that
// grows without bound exhausts neither file descriptors nor ports: in-process
// backends hold both ends of every connection.
func connsPerInstance(fileLimit uint64, instances int, p fleet.Provider) int {
	perConn := uint64(1)
	if inProcess(p) {
		perConn = 2
	}
	const reserve = 512
	if fileLimit <= reserve+uint64(instances)*perConn {
		return 1
	}
	n := (fileLimit - reserve) / (perConn * uint64(max(instances, 1)))
	return int(min(n, 20000))
}

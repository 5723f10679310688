// Package live is the real engine: Vegeta's open-loop load, through the
// transport client and the strategy under test (or a real proxy), to
// real HTTP backends that a fleet.Provider starts, with the fault schedule
// played on them through their control API or their container runtime.
package live

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/metrics"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/harness/transport"
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
	// Metrics, when set, is told each strategy's requests as they are
	// measured (metrics.go); not those of a distributed run.
	Metrics *metrics.Exporter
	// SkipMissing leaves out the proxy strategies whose proxy is not
	// installed (Skip names them) instead of refusing the run with a
	// *MissingProxies.
	SkipMissing bool
	// ProxyMissing, when set, replaces proxies.Missing: it returns an
	// error wrapping proxies.ErrNotInstalled when the proxy a strategy
	// needs is not installed, else nil.
	ProxyMissing func(strategy string) error
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
	if err := checkWorkload(exp, e.opts.Provider); err != nil {
		return nil, err
	}
	if err := e.checkProxies(exp); err != nil {
		return nil, err
	}
	if err := checkGRPC(exp); err != nil {
		return nil, err
	}
	if err := checkLoadPolling(exp); err != nil {
		return nil, err
	}
	if err := checkAbort(exp); err != nil {
		return nil, err
	}
	if err := checkTiers(exp, e.opts.Provider); err != nil {
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

// services reports why p cannot put a fleet behind a Kubernetes Service;
// nil when it can.
func services(p fleet.Provider) error {
	sp, ok := p.(fleet.ServiceProvider)
	if !ok {
		return fmt.Errorf("a Kubernetes Service needs pods: run with --backends kube (these backends are %s)", p.Name())
	}
	if ok, why := sp.Services(); !ok {
		return errors.New(why)
	}
	return nil
}

// checkService reports why strategy name (kube:service) cannot run: its
// load comes from generator pods, to the Service of a fleet of pods.
func (e *Engine) checkService(name string) error {
	if err := services(e.opts.Provider); err != nil {
		return fmt.Errorf("strategy %s: %w", name, err)
	}
	if e.launcher() == nil {
		return fmt.Errorf("strategy %s: its load comes from generator pods in the cluster, and the engine has no launcher of them", name)
	}
	return nil
}

// checkProxies rejects, before anything starts, proxy strategies the
// experiment cannot run: a proxy's configuration is written once per
// strategy, so instances that join later or move (a killed container's new
// port) would not reach it, and a proxy is one balancer, not replicas. It
// also checks that each proxy is installed and that a file spec's file
// (nginx:file, haproxy:file) is a section lbchaos can complete. The
// strategies whose proxy is missing are named all at once in a
// *MissingProxies; with SkipMissing they are left out unchecked.
func (e *Engine) checkProxies(exp *experiments.Experiment) error {
	var absent MissingProxies
	for i, name := range exp.Strategies {
		if proxyspec.IsService(name) {
			if err := e.checkService(name); err != nil {
				return err
			}
			continue
		}
		if !proxyspec.IsProxy(name) {
			continue
		}
		if e.opts.SkipMissing && e.missing(name) != nil {
			continue // Skip leaves it out
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
		if e.opts.ProxyMissing != nil {
			err = e.opts.ProxyMissing(name)
		}
		if err == nil {
			err = proxies.Check(name, exp.ProxyFiles[name], e.opts.LbchaosBinary)
		}
		if errors.Is(err, proxies.ErrNotInstalled) {
			absent.Strategies = append(absent.Strategies, name)
			absent.Why = append(absent.Why, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("strategy %s: %w", name, err)
		}
	}
	if len(absent.Strategies) > 0 {
		return &absent
	}
	return nil
}

// Measure implements engine.Engine: one strategy against a fresh fleet.
// With exp.Generators > 1 this process is the coordinator: it runs the
// fleet and the faults, and the load comes from its generators
// (measureSpread).
func (e *Engine) Measure(ctx context.Context, job engine.Job) (m *engine.Measurement, err error) {
	exp, opts := job.Exp, e.opts
	if why := e.Skip(exp, job.Name()); why != "" {
		return &engine.Measurement{Skipped: why}, nil
	}
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
		if b.URL == nil {
			continue // an instance yet to come (a rollout's pod): no address
		}
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
	a := &attack{job: job, fl: fl, inc: inc, rawDir: opts.RawDir, every: opts.ProgressEvery, watch: true, inProcess: inProcess(opts.Provider)}
	defer a.close()
	// Instances behind a Service are reached by generator pods only.
	if fleet.ServiceOf(fl) != nil || exp.Generators > 1 && exp.Protocol != experiments.ProtocolGRPC {
		return e.measureSpread(ctx, a, targets, conns)
	}
	if err := e.prepare(ctx, a, targets, conns); err != nil {
		return nil, err
	}
	var tr *tiers
	if len(exp.Tiers) > 0 {
		if tr, err = startTiers(a, targets); err != nil {
			return nil, err
		}
		defer tr.close()
	}
	defer e.exportMetrics(a, len(targets))()
	r, err := a.run(ctx)
	if err != nil {
		return nil, err
	}
	m = a.measure(ctx, r, conns)
	if tr != nil {
		engine.FillTiers(exp, &m.Strategy, engine.TierRetryStats(tr.lbs))
	}
	return m, a.faults.error()
}

// prepare builds what sends a's load in this process (the strategy's
// balancers or its proxy under test, and the load through them), its
// schedule and collector, and opens its raw results.
func (e *Engine) prepare(ctx context.Context, a *attack, targets []*url.URL, conns int) (err error) {
	exp, name := a.job.Exp, a.job.Name()
	a.events = engine.NewEventLog(time.Now())
	overGRPC := exp.Protocol == experiments.ProtocolGRPC
	a.proxied = !overGRPC && proxyspec.IsProxy(name)
	if !a.proxied && !(overGRPC && strategies.IsGRPC(name)) {
		if a.lbs, err = engine.NewBalancers(exp, name, strategies.SystemClock{}, a.events); err != nil {
			return err
		}
	}
	switch {
	case overGRPC:
		if a.load, err = newGRPCLoad(ctx, exp, name, a.lbs, targets, conns, a.events, &a.armed, &a.start); err != nil {
			return err
		}
	case a.proxied:
		if a.proxy, err = proxies.Start(ctx, name, exp.ProxyFiles[name], targets, exp.Timeout, e.opts.LbchaosBinary, exp.Seed); err != nil {
			return err
		}
		a.inc.watchProxy(a.proxy)
		c := transport.NewProxyClient(a.proxy.URL(), a.proxy.InstanceOf, len(targets), exp.Timeout, proxyClientConns(exp, conns, len(targets)), protocolOptions(exp)...)
		a.load = newHTTPLoad(exp, name, c, &a.start, 0, 1)
	default:
		// With tiers the client calls the first tier alone.
		c := transport.NewClient(a.lbs, targets[:exp.EdgeCount()], exp.Timeout, conns, protocolOptions(exp)...)
		a.load = newHTTPLoad(exp, name, c, &a.start, 0, 1)
	}
	a.sched = engine.ExperimentSchedule(exp)
	a.coll = engine.NewCollector(len(targets), exp.Duration, exp.Timeout, exp.SlowThreshold)
	a.coll.SetZones(exp)
	if engine.HasPolicy(a.lbs) {
		a.coll.CountAttempts()
	}
	a.raw, err = openRaw(e.opts.RawDir, a.job)
	return err
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

// proxyConns bounds the client's connections to a proxy under test: the
// open-file budget connsPerInstance shares out per instance, at most 9000
// (the generated proxy configurations take 9000 requests at once).
func proxyConns(perInstance, instances int) int {
	return max(64, min(9000, perInstance*instances))
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

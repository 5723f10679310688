// Package harness runs experiments: it starts backends, routes Vegeta's
// open-loop load through the strategy under test, drives the fault schedule
// and collects every result into HdrHistograms.
package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// Version is the lbchaos version recorded in summaries.
var Version = "dev"

// Options configure a run. The zero value runs in-process backends quietly.
type Options struct {
	// Provider starts the backends; nil means ProcessProvider.
	Provider Provider
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// MaxConnsPerInstance bounds the client's connections to one instance;
	// 0 derives it from the open-file limit.
	MaxConnsPerInstance int
	// ProgressEvery is the interval of progress lines (default 5 s).
	ProgressEvery time.Duration
	// Progress, when set, is called about once a second during each attack
	// instead of the periodic progress lines on Log.
	Progress func(Progress)
	// RawDir, when set, receives each strategy's raw data: every result in
	// Vegeta's encoding (results-<strategy>.bin, readable by `vegeta
	// report` and `vegeta plot`) and its latency histograms as an
	// HdrHistogram log (latency-<strategy>.hlog).
	RawDir string
	// LbchaosBinary is the lbchaos executable that "lbchaos:..." proxy
	// strategies run as `lbchaos proxy`; the command sets it to itself.
	LbchaosBinary string
}

// Progress is a snapshot of the attack in progress.
type Progress struct {
	Strategy     string
	Index, Total int           // 1-based position of the strategy in the run
	Elapsed      time.Duration // since the attack started
	Duration     time.Duration // the attack's length
	Results      int64         // requests answered or failed so far
	Errors       int64
	InFlight     int64 // requests between pick and done
}

// ErrInterrupted is returned (wrapped) with a partial summary when the run's
// context was cancelled before every strategy finished.
var ErrInterrupted = errors.New("run interrupted")

// Run runs exp's strategies one after another, each against a fresh fleet in
// the same initial state, and returns the summary. When ctx is cancelled the
// attack in progress stops, requests still in flight are cancelled and left
// out, and Run returns what was measured so far with Partial set and an
// error wrapping ErrInterrupted. On any other error the summary returned, if
// not nil, holds the strategies that completed.
func Run(ctx context.Context, exp *experiments.Experiment, opts Options) (*reports.Summary, error) {
	if opts.Provider == nil {
		opts.Provider = ProcessProvider{}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 5 * time.Second
	}
	limit := RaiseFileLimit()
	if opts.MaxConnsPerInstance == 0 {
		opts.MaxConnsPerInstance = connsPerInstance(limit, exp.Instances.Count, opts.Provider)
	}

	if err := CheckProvider(exp, opts.Provider); err != nil {
		return nil, err
	}
	if err := checkProxies(exp, opts); err != nil {
		return nil, err
	}
	sum := newSummary(exp, opts.Provider.Name())
	for i, name := range exp.Strategies {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(opts.Log, "[%d/%d] %s: %v at %g req/s (%s) against %d %s backends\n",
			i+1, len(exp.Strategies), name, exp.Duration, exp.Rate, exp.Arrival, exp.Instances.Count, opts.Provider.Name())
		st, notes, err := runStrategy(ctx, exp, i, opts)
		sum.Notes = append(sum.Notes, notes...)
		if err != nil {
			sum.Partial = sum.Partial || st != nil
			if st != nil {
				sum.Strategies = append(sum.Strategies, *st)
			}
			reports.Derive(sum)
			return sum, fmt.Errorf("strategy %s: %w", name, err)
		}
		sum.Strategies = append(sum.Strategies, *st)
		fmt.Fprintf(opts.Log, "      done: %d requests, %.2f%% errors, p50 %.1f ms, p99 %.1f ms\n",
			st.Requests, 100*st.ErrorRatio, st.LatencyMs.P50, st.LatencyMs.P99)
	}
	reports.Derive(sum)
	return finishRun(ctx, sum, exp)
}

// finishRun marks sum partial when ctx was cancelled before every strategy
// of exp finished, and returns the error that says so.
func finishRun(ctx context.Context, sum *reports.Summary, exp *experiments.Experiment) (*reports.Summary, error) {
	if ctx.Err() == nil {
		return sum, nil
	}
	sum.Partial = true
	sum.Notes = append(sum.Notes, fmt.Sprintf("The run was interrupted: %d of %d strategies measured; the last one only in part.",
		len(sum.Strategies), len(exp.Strategies)))
	return sum, fmt.Errorf("%w: %d of %d strategies measured", ErrInterrupted, len(sum.Strategies), len(exp.Strategies))
}

func newSummary(exp *experiments.Experiment, backends string) *reports.Summary {
	sum := &reports.Summary{
		Schema:          reports.Schema,
		Experiment:      exp.Name,
		Engine:          "real",
		Backends:        backends,
		Seed:            exp.Seed,
		Started:         time.Now().UTC().Truncate(time.Second),
		DurationS:       exp.Duration.Seconds(),
		TargetRate:      exp.Rate,
		SlowThresholdMs: float64(exp.SlowThreshold) / float64(time.Millisecond),
		FaultyInstances: exp.FaultyInstances(),
		Strategies:      []reports.Strategy{},
		Description:     exp.Description,
		Arrival:         exp.Arrival,
		TimeoutMs:       float64(exp.Timeout) / float64(time.Millisecond),
		Instances:       exp.Instances.Count,
		Workers:         exp.Instances.Workers,
		Service:         exp.Instances.Service.String(),
		ExperimentFile:  string(exp.Raw),
		GoVersion:       runtime.Version(),
		CPUs:            runtime.NumCPU(),
		Version:         Version,
	}
	for _, f := range exp.Faults {
		end := exp.Duration
		if f.Until != 0 && f.Until < end {
			end = f.Until
		}
		sum.Faults = append(sum.Faults, reports.FaultWindow{
			Instance: f.Instance,
			Mode:     f.Spec.Mode(),
			Detail:   strings.TrimSpace(strings.TrimPrefix(faultyserver.Describe(f.Spec), f.Spec.Mode())),
			StartS:   f.At.Seconds(),
			EndS:     end.Seconds(),
		})
	}
	return sum
}

// strategySeed gives each strategy its own random stream, stable under
// reordering of the experiment's strategy list.
func strategySeed(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = io.WriteString(h, name)
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// eventLog records a strategy's ejections and re-admissions.
type eventLog struct {
	mu     sync.Mutex
	start  time.Time
	events []reports.Event
	drops  int
}

const maxEvents = 100000

func (l *eventLog) add(e strategies.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) >= maxEvents {
		l.drops++
		return
	}
	l.events = append(l.events, reports.Event{TimeS: e.Time.Sub(l.start).Seconds(), Instance: e.Endpoint, Kind: e.Kind, Detail: e.Detail})
}

func (l *eventLog) setStart(t time.Time) {
	l.mu.Lock()
	l.start = t
	l.mu.Unlock()
}

// runStrategy measures one strategy against a fresh fleet.
func runStrategy(ctx context.Context, exp *experiments.Experiment, index int, opts Options) (st *reports.Strategy, notes []string, err error) {
	name := exp.Strategies[index]
	fleet, err := opts.Provider.Start(ctx, FleetSpec{Instances: exp.Instances, Seed: exp.Seed})
	if err != nil {
		return nil, nil, fmt.Errorf("start %s backends: %w", opts.Provider.Name(), err)
	}
	defer fleet.Close()
	backends := fleet.Backends()
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := b.Control.Healthy(hctx)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("instance %d at %s is not healthy: %w", b.ID, b.URL, err)
		}
		targets[i] = b.URL
	}

	events := &eventLog{start: time.Now()}
	var (
		lbs   []*strategies.Balancer
		bal   *Balancer
		proxy *proxyProcess
	)
	if strategies.IsProxy(name) {
		if proxy, err = startProxyFor(ctx, exp, name, backends, opts); err != nil {
			return nil, nil, err
		}
		defer func() {
			proxy.stop()
			os.RemoveAll(proxy.cfg.dir)
		}()
		bal = NewProxyClient(proxyURL(proxy.cfg.listen), proxy.instanceOf, len(backends), exp.Timeout, proxyConns(opts.MaxConnsPerInstance, len(backends)), ctx)
	} else {
		if lbs, err = newBalancers(exp, name, strategies.SystemClock{}, events); err != nil {
			return nil, nil, err
		}
		bal = NewBalancer(lbs, targets, exp.Timeout, opts.MaxConnsPerInstance, ctx)
	}
	defer bal.CloseIdleConnections()
	client := &http.Client{
		Transport: bal, // applies the request timeout itself
		Timeout:   0,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	attacker := vegeta.NewAttacker(
		vegeta.Client(client),
		vegeta.Workers(uint64(max(10, min(exp.Rate/20, 1000)))),
		vegeta.MaxBody(0),
	)
	var start time.Time // set just before the attack; read by the targeter
	targeter := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: "http://lbchaos-backend/"})
	if keys := newKeySource(exp.Keys, exp.Seed); keys != nil {
		targeter = keyTargeter(keys, &start)
	}
	sched := NewSchedule(exp.Arrival, exp.Rate, exp.Seed)
	coll := newCollector(len(backends), exp.Duration, exp.Timeout, exp.SlowThreshold)

	var raw *rawWriter
	if opts.RawDir != "" {
		if raw, err = newRawWriter(filepath.Join(opts.RawDir, "results-"+reports.Slug(name)+".bin")); err != nil {
			return nil, nil, fmt.Errorf("raw results: %w", err)
		}
		defer func() {
			if cerr := raw.close(); cerr != nil && err == nil {
				err = fmt.Errorf("raw results: %w", cerr)
			}
		}()
	}

	faults := newFaultRunner(fleet, exp.Faults, exp.Duration, bal.SetTarget)
	if err := faults.applyInitial(ctx); err != nil {
		return nil, nil, err
	}
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()

	start = time.Now()
	events.setStart(start)
	var faultWG sync.WaitGroup
	faultWG.Add(1)
	go func() {
		defer faultWG.Done()
		faults.run(faultCtx, start, func(error) { attacker.Stop() })
	}()
	faultWG.Go(func() { runJoins(faultCtx, start, exp, lbs) })
	if len(lbs) == 0 {
		// A proxy under test probes its backends itself, if configured to.
	} else if pc, ok := lbs[0].Probes(); ok {
		for _, b := range backends {
			faultWG.Go(func() { probeLoop(faultCtx, pc, b.ID, bal, lbs) })
		}
	}
	results := attacker.Attack(targeter, sched, exp.Duration, name)

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var (
		sent        int64 // every result, aborted ones included
		errs        int64
		interrupted time.Duration = -1
		lastLog                   = start
		unnamed     []seqOutcome  // proxy strategies: results to attribute from the access log
		done        = ctx.Done()
	)
	for results != nil {
		select {
		case res, ok := <-results:
			if !ok {
				results = nil
				break
			}
			sent++
			if raw != nil {
				raw.add(res)
			}
			rt, routed := bal.take(res.Seq)
			if routed && rt.aborted.Load() {
				coll.abort()
				continue
			}
			if due, ok := sched.Due(res.Seq); ok {
				coll.recordLag(res.Timestamp.Sub(start) - due)
			}
			o := classify(res, start, rt, routed)
			if !o.success {
				errs++
			}
			if proxy != nil && o.instance < 0 && routed {
				// Neither the backend nor the proxy named an instance (the
				// client gave up first): the proxy's access log will.
				unnamed = append(unnamed, seqOutcome{res.Seq, o})
				continue
			}
			coll.add(o)
		case now := <-tick.C:
			coll.sweep(now.Sub(start))
			if opts.Progress != nil {
				opts.Progress(Progress{Strategy: name, Index: index + 1, Total: len(exp.Strategies),
					Elapsed: now.Sub(start), Duration: exp.Duration, Results: sent, Errors: errs, InFlight: bal.InFlight()})
			} else if now.Sub(lastLog) >= opts.ProgressEvery {
				lastLog = now
				el := now.Sub(start).Truncate(time.Second)
				if el <= exp.Duration {
					fmt.Fprintf(opts.Log, "      %v/%v: %d results, %.2f%% errors\n", el, exp.Duration, sent, 100*ratio(errs, sent))
				} else {
					fmt.Fprintf(opts.Log, "      %v: attack over; %d results, waiting for %d requests still in flight (timeout %v)\n",
						el, sent, bal.InFlight(), exp.Timeout)
				}
			}
		case <-done:
			done = nil
			interrupted = time.Since(start)
			attacker.Stop()
		}
	}
	span := time.Since(start) // until the last request ended
	stopFaults()
	faultWG.Wait()
	if proxy != nil {
		proxy.stop() // flushes its access log
		names, aerr := proxy.attribution()
		if aerr != nil {
			notes = append(notes, fmt.Sprintf("%s: the proxy's access log could not be read (%v); %d requests without an answer stay unattributed.", name, aerr, len(unnamed)))
		}
		for _, u := range unnamed {
			if id, ok := names[u.seq]; ok {
				u.o.instance = id
			}
			coll.add(u.o)
		}
		notes = append(notes, fmt.Sprintf("%s: a real %s between the load generator and the backends; its own ejections and health checks are not observed, and its latency includes the extra hop.", name, proxy.cfg.spec.Kind))
	}
	coll.finish()
	if opts.RawDir != "" {
		if err := writeHDRLog(opts.RawDir, name, coll, start, start.Add(attackTime(exp.Duration, interrupted))); err != nil {
			notes = append(notes, fmt.Sprintf("%s: histogram log not written: %v", name, err))
		}
	}

	elapsed := attackTime(exp.Duration, interrupted)
	s := coll.strategy(name, exp.FaultyInstances())
	s.ElapsedS = elapsed.Seconds()
	if interrupted < 0 {
		for _, b := range fleet.Backends() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if stats, err := b.Control.Stats(sctx); err == nil {
				setUtilization(&s.Instances[b.ID], stats.BusyS, exp.Instances.Instance(b.ID).Workers, span)
			}
			cancel()
		}
	}
	if elapsed > 0 {
		s.AchievedRate = float64(sent) / elapsed.Seconds()
	}
	scheduled := sched.Count(elapsed)
	s.GeneratorBehind = float64(sent) < 0.99*float64(scheduled)
	for _, lb := range lbs {
		s.Ejections += lb.Ejections()
	}
	events.mu.Lock()
	s.Events = events.events
	sort.SliceStable(s.Events, func(i, j int) bool { return s.Events[i].TimeS < s.Events[j].TimeS })
	events.mu.Unlock()
	s.Partial = interrupted >= 0

	if s.GeneratorBehind {
		notes = append(notes, fmt.Sprintf("%s: the generator fell behind: %d requests sent where the schedule had %d (%.1f%%); send lag p99 %.1f ms, max %.1f ms. Numbers for this strategy understate the intended load.",
			name, sent, scheduled, 100*ratio(sent, int64(scheduled)), s.SendLagMs.P99, s.SendLagMs.Max))
	}
	if n := bal.CapHits(); n > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d requests found their instance at the bound of %d connections and queued in the client; their latency includes that wait.",
			name, n, opts.MaxConnsPerInstance))
	}
	if coll.aborted > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d requests in flight when the run was interrupted were cancelled and are not counted.", name, coll.aborted))
	}
	if coll.unattributed > 0 {
		notes = append(notes, unattributedNote(name, coll.unattributed))
	}
	if events.drops > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d ejection events beyond the first %d were not recorded.", name, events.drops, maxEvents))
	}
	if ferr := faults.error(); ferr != nil {
		return &s, notes, ferr
	}
	return &s, notes, nil
}

// checkProxies rejects, before anything starts, proxy strategies the
// experiment cannot run: a proxy's configuration is written once per
// strategy, so instances that join later or move (a killed container's new
// port) would not reach it, and a proxy is one balancer, not replicas. It
// also checks that each proxy is installed.
func checkProxies(exp *experiments.Experiment, opts Options) error {
	for i, name := range exp.Strategies {
		if !strategies.IsProxy(name) {
			continue
		}
		ps, err := strategies.ParseProxy(name)
		if err != nil {
			return fmt.Errorf("strategies[%d]: %w", i, err)
		}
		switch {
		case exp.Replicas > 1:
			return fmt.Errorf("strategy %s: replicas (%d) apply to built-in strategies; a proxy is one balancer", name, exp.Replicas)
		case len(exp.Instances.Joining()) > 0:
			return fmt.Errorf("strategy %s: instances that join during the run cannot reach a proxy whose configuration is written at the start", name)
		}
		for _, f := range exp.Faults {
			if f.Spec.Mode() == "kill" {
				return fmt.Errorf("strategy %s: a killed container comes back on a new port, which a proxy's configuration does not follow; run kill faults with built-in strategies", name)
			}
		}
		if _, err := proxyBinary(ps.Kind, opts.LbchaosBinary); err != nil {
			return fmt.Errorf("strategy %s: %w", name, err)
		}
	}
	return nil
}

// seqOutcome is a result waiting for attribution.
type seqOutcome struct {
	seq uint64
	o   outcome
}

// startProxyFor starts the proxy strategy name in front of backends.
func startProxyFor(ctx context.Context, exp *experiments.Experiment, name string, backends []Backend, opts Options) (*proxyProcess, error) {
	ps, err := strategies.ParseProxy(name)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lbchaos-"+ps.Kind+"-")
	if err != nil {
		return nil, err
	}
	listen, err := freeLoopbackAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("find a free port for %s: %w", ps.Kind, err)
	}
	p, err := startProxy(ctx, proxyConfig{spec: ps, listen: listen, backends: backends, timeout: exp.Timeout, dir: dir, lbchaos: opts.LbchaosBinary})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// proxyConns bounds the client's connections to a proxy under test: the
// open-file budget connsPerInstance shares out per instance, at most 9000
// (the generated proxy configurations take 9000 requests at once).
func proxyConns(perInstance, instances int) int {
	return max(64, min(9000, perInstance*instances))
}

// unattributedNote says that n requests of strategy name reached no
// instance.
func unattributedNote(name string, n int64) string {
	return fmt.Sprintf("%s: %d requests reached no instance: the strategy allowed none (every instance ejected: \"no healthy upstream\") or they failed before a pick. They count as errors, attributed to no instance.", name, n)
}

// newBalancers builds exp.Replicas independent balancers of strategy name
// (replica 0 seeded as a single balancer is), with the instances' weights,
// and with the instances that join later left out of the host set. Events
// are recorded from then on.
func newBalancers(exp *experiments.Experiment, name string, clock strategies.Clock, events *eventLog) ([]*strategies.Balancer, error) {
	n := exp.Instances.Count
	var armed atomic.Bool
	record := func(e strategies.Event) {
		if armed.Load() {
			events.add(e)
		}
	}
	initial := make([]int, 0, n)
	for id := range n {
		if exp.Instances.Instance(id).JoinAt == 0 {
			initial = append(initial, id)
		}
	}
	lbs := make([]*strategies.Balancer, max(1, exp.Replicas))
	for r := range lbs {
		seedName := name
		if r > 0 {
			seedName = fmt.Sprintf("%s#%d", name, r)
		}
		lb, err := strategies.New(name, strategies.Env{
			N:       n,
			Clock:   clock,
			Rand:    strategySeed(exp.Seed, seedName),
			Events:  record,
			Weights: exp.Instances.Weights(),
		})
		if err != nil {
			return nil, err
		}
		if len(initial) < n {
			if err := lb.SetHosts(initial); err != nil {
				return nil, err
			}
		}
		lbs[r] = lb
	}
	armed.Store(true)
	return lbs, nil
}

// joinSteps returns, in time order, when the host set grows and the host
// set from then on.
func joinSteps(exp *experiments.Experiment) (at []time.Duration, hosts [][]int) {
	joining := exp.Instances.Joining()
	for i, id := range joining {
		t := exp.Instances.Instance(id).JoinAt
		if i+1 < len(joining) && exp.Instances.Instance(joining[i+1]).JoinAt == t {
			continue // joins at the same time are one update
		}
		var set []int
		for h := range exp.Instances.Count {
			if j := exp.Instances.Instance(h).JoinAt; j <= t {
				set = append(set, h)
			}
		}
		at, hosts = append(at, t), append(hosts, set)
	}
	return at, hosts
}

// runJoins adds the joining instances to every balancer's host set at their
// time, until ctx is done.
func runJoins(ctx context.Context, start time.Time, exp *experiments.Experiment, lbs []*strategies.Balancer) {
	at, hosts := joinSteps(exp)
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
	}
}

// probeLoop actively checks instance id as pc says, every interval, and
// reports each result to every balancer, until ctx is done. A probe is
// healthy when it answers 2xx within the timeout.
func probeLoop(ctx context.Context, pc strategies.ProbeConfig, id int, bal *Balancer, lbs []*strategies.Balancer) {
	client := &http.Client{Timeout: pc.Timeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(pc.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		u := *bal.targets[id].Load()
		u.Path = pc.Path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return
		}
		healthy := false
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			healthy = resp.StatusCode >= 200 && resp.StatusCode < 300
		}
		if ctx.Err() != nil {
			return
		}
		for _, lb := range lbs {
			lb.ReportProbe(id, healthy)
		}
	}
}

// keyTargeter gives every request the next key of keys in
// strategies.KeyHeader; *start is the attack's start, for keys that change
// over time (a hot key from some point on).
func keyTargeter(keys *keySource, start *time.Time) vegeta.Targeter {
	var next atomic.Uint64
	return func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		t.Method = http.MethodGet
		t.URL = "http://lbchaos-backend/"
		t.Body = nil
		t.Header = http.Header{strategies.KeyHeader: []string{strconv.FormatUint(keys.key(i, time.Since(*start)), 10)}}
		return nil
	}
}

// rawWriter encodes results in Vegeta's format on a goroutine of its own,
// so that file output never slows the loop that collects results.
type rawWriter struct {
	ch   chan *vegeta.Result
	done chan error
}

func newRawWriter(path string) (*rawWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &rawWriter{ch: make(chan *vegeta.Result, 1<<14), done: make(chan error, 1)}
	go func() {
		bw := bufio.NewWriterSize(f, 1<<20)
		enc := vegeta.NewEncoder(bw)
		var werr error
		for r := range w.ch {
			if werr == nil {
				werr = enc(r)
			}
		}
		if ferr := bw.Flush(); werr == nil {
			werr = ferr
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		w.done <- werr
	}()
	return w, nil
}

// add queues r; it blocks only when the encoder is 16384 results behind.
func (w *rawWriter) add(r *vegeta.Result) { w.ch <- r }

// close waits until everything queued is written.
func (w *rawWriter) close() error {
	close(w.ch)
	return <-w.done
}

// attackTime is how long the attack sent requests: its duration, or until it
// was interrupted (interrupted < 0: it was not).
func attackTime(duration, interrupted time.Duration) time.Duration {
	if interrupted >= 0 && interrupted < duration {
		return interrupted
	}
	return duration
}

func writeHDRLog(dir, name string, coll *collector, start, end time.Time) error {
	f, err := os.Create(filepath.Join(dir, "latency-"+reports.Slug(name)+".hlog"))
	if err != nil {
		return err
	}
	werr := coll.writeHDRLog(f, name, start, end)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// connsPerInstance bounds connections per instance so that a queue that
// grows without bound exhausts neither file descriptors nor ports: in-process
// backends hold both ends of every connection.
func connsPerInstance(fileLimit uint64, instances int, p Provider) int {
	perConn := uint64(1)
	if _, ok := p.(ProcessProvider); ok {
		perConn = 2
	}
	const reserve = 512
	if fileLimit <= reserve+uint64(instances)*perConn {
		return 1
	}
	n := (fileLimit - reserve) / (perConn * uint64(max(instances, 1)))
	return int(min(n, 20000))
}

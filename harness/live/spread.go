package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// DefaultGeneratorLead is how long after launching its generators a
// distributed run's shared start is: time for each to start and get ready.
const DefaultGeneratorLead = time.Second

// checkGenerators rejects, before anything starts, what a distributed run
// (generators > 1) cannot do: the generators need the lbchaos executable;
// each sends to the instances' addresses as they were at the start, so an
// instance that moves (a killed container's new port) would not be
// followed.
func checkGenerators(exp *experiments.Experiment, l engine.Launcher) error {
	if exp.Generators <= 1 {
		return nil
	}
	if l == nil {
		return fmt.Errorf("generators (%d): the generators are lbchaos processes (lbchaos generate), and the engine was given no lbchaos executable (live.Options.LbchaosBinary)", exp.Generators)
	}
	for _, f := range exp.Faults {
		if c, ok := f.Spec.(faultyserver.ContainerFault); ok && c.Relocates() {
			return fmt.Errorf("generators (%d): mode %q brings the instance back on a new address, which the generators do not follow; run it with one generator", exp.Generators, f.Spec.Mode())
		}
	}
	return nil
}

// measureSpread measures strategy job with exp.Generators generator
// processes (`lbchaos generate`), on the fleet fl whose instances are at
// targets: the coordinator applies the fault schedule from the shared
// start, as a single process does, and merges the generators' streams
// into one measurement. A generator that fails or whose stream is cut
// short fails the strategy with an error naming it; when ctx is cancelled
// the generators are interrupted, and they end their streams with what
// they measured, which is merged as a partial measurement.
func (e *Engine) measureSpread(ctx context.Context, a *attack, targets []*url.URL, conns int) (m *engine.Measurement, err error) {
	job, opts := a.job, e.opts
	exp, name := job.Exp, job.Name()
	gens := exp.Generators
	a.coll = engine.NewCollector(len(targets), exp.Duration, exp.Timeout, exp.SlowThreshold)
	merger := engine.NewMerger(a.coll, gens)
	if a.raw, err = openRaw(opts.RawDir, job); err != nil {
		return nil, err
	}
	// A proxy strategy: one proxy, which every generator sends to; a
	// Service is the cluster's.
	var hop *url.URL
	var upstreams map[string]int
	switch {
	case proxyspec.IsService(name):
		if hop = fleet.ServiceOf(a.fl); hop == nil {
			return nil, fmt.Errorf("strategy %s: the instances are not behind a Kubernetes Service (run with --backends kube)", name)
		}
	case proxyspec.IsProxy(name):
		if a.proxy, err = proxies.Start(ctx, name, exp.ProxyFiles[name], targets, exp.Timeout, opts.LbchaosBinary, exp.Seed); err != nil {
			return nil, err
		}
		a.inc.watchProxy(a.proxy)
		hop, upstreams = a.proxy.URL(), a.proxy.Upstreams()
	}
	if err := a.arm(ctx); err != nil {
		return nil, err
	}

	launcher := e.launcher()
	a.start = time.Now().Add(launcher.Lead())
	// runCtx interrupts every generator: on the caller's cancel, on the
	// first generator that fails, on a fault that cannot be applied.
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	bg, err := a.begin(runCtx, interrupt)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(job.Log, "      %d generators (lbchaos generate, %s), from %s\n", gens, launcher.Name(), a.start.Format("15:04:05.000"))

	// The connection bound holds for the run: the generators share it.
	conns = max(1, conns/gens)
	generators, err := launcher.Launch(runCtx, engine.LaunchSpec{
		N:          gens,
		Args:       generateArgs(exp, name, targets, hop, upstreams, a.start, conns, a.raw != nil, endpointsListen(launcher)),
		Experiment: exp.Raw,
		Grace:      exp.Timeout + 10*time.Second,
		Log:        job.Log,
	})
	if err != nil {
		bg.end()
		return nil, err
	}
	// A client-side strategy follows the Service's ready endpoints, as a
	// client with the cluster's endpoint discovery does.
	stopFollow := func() {}
	if hop == nil && endpointsListen(launcher) != "" {
		stopFollow = followEndpoints(a.fl, generators, job.Log)
	}
	defer stopFollow()
	errs, rawErrs := readGenerators(generators, merger, a.raw, interrupt)
	progressDone := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() { spreadProgress(progressDone, job, a.start, merger) })
	errs.Wait()
	close(progressDone)
	span := time.Since(a.start) // until the last request ended
	stopped := bg.end()
	progress.Wait()

	if err := errors.Join(errs.errs...); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return nil, err
	}
	var proxyNotes []string
	var attempts map[int]int64
	if a.proxy != nil {
		proxyNotes, attempts = attributeProxy(a.proxy, name, merger.Unnamed(), nil, a.coll)
	}
	if hop != nil && a.proxy == nil {
		proxyNotes = serviceNotes(name, merger.Unnamed(), a.coll)
	}
	if m, err = merger.Measurement(name, exp.FaultyInstances()); err != nil {
		return nil, err
	}
	if a.proxy != nil {
		setAttempts(&m.Strategy, attempts)
		m.Strategy.AttemptsPerRequest = nil // several generators: not counted (executionsMeasurable)
	}
	m.Notes = append(m.Notes, proxyNotes...)
	a.inc.addTo(m)
	if fleet.ServiceOf(a.fl) != nil {
		reports.DeriveRotation(&m.Strategy, m.Events, faultStarts(exp))
	}
	m.Interrupted = m.Interrupted || stopped > 0
	for g, err := range rawErrs {
		if err != nil {
			m.Notes = append(m.Notes, fmt.Sprintf("%s: generator %d's raw results could not be decoded (%v); the strategy's results.bin.zst lacks some of them.", name, g, err))
		}
	}
	if note := a.raw.note(name, a.start); note != "" {
		m.Notes = append(m.Notes, note)
	}
	for g, late := range merger.Late() {
		if late > 0 {
			m.Notes = append(m.Notes, fmt.Sprintf("%s: generator %d was ready %v after the shared start; its first requests left late.", name, g, late.Round(time.Millisecond)))
		}
	}
	if opts.RawDir != "" {
		if err := writeHDRLog(opts.RawDir, job, a.coll, a.start, a.start.Add(m.Elapsed)); err != nil {
			m.Notes = append(m.Notes, fmt.Sprintf("%s: histogram log not written: %v", name, err))
		}
	}
	if !m.Interrupted {
		setUtilization(ctx, a.fl, exp, m, span)
	}
	return m, a.faults.error()
}

// generatorErrs are the generators' errors, by generator, once Wait has
// returned.
type generatorErrs struct {
	wg   sync.WaitGroup
	errs []error
}

func (g *generatorErrs) Wait() { g.wg.Wait() }

// readGenerators merges each generator's stream into merger, its raw
// results into raw (nil: none kept), and waits for it to end; a generator
// that fails, or whose stream cannot be merged, interrupts the others. The
// raw results' errors are the decoders', by generator, once the errors'
// Wait has returned.
func readGenerators(generators []engine.Generator, merger *engine.Merger, raw *rawWriter, interrupt func()) (*generatorErrs, []error) {
	errs := &generatorErrs{errs: make([]error, len(generators))}
	rawErrs := make([]error, len(generators))
	for g, gen := range generators {
		errs.wg.Go(func() {
			var sink io.Writer
			var decoded chan error
			if raw != nil {
				pr, pw := io.Pipe()
				sink, decoded = pw, make(chan error, 1)
				go func() { decoded <- decodeRaw(pr, raw) }()
				defer func() { _ = pw.Close(); rawErrs[g] = <-decoded }()
			}
			stream := gen.Stream()
			rerr := merger.Read(g, stream, sink)
			if rerr != nil {
				// Stop it: its results cannot be merged.
				interrupt()
				_, _ = io.Copy(io.Discard, stream)
			}
			if err := gen.Wait(rerr); err != nil {
				errs.errs[g] = err
				interrupt()
			}
		})
	}
	return errs, rawErrs
}

// spreadProgress reports a distributed attack's progress, the generators'
// summed, every second until done.
func spreadProgress(done <-chan struct{}, job engine.Job, start time.Time, merger *engine.Merger) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			if job.Progress != nil && now.After(start) {
				p := merger.Progress()
				pos, of := job.Position()
				job.Progress(engine.Progress{Strategy: job.Name(), Index: pos, Total: of,
					Elapsed: now.Sub(start), Duration: job.Exp.Duration, Results: p.Results, Errors: p.Errors, InFlight: p.InFlight})
			}
		}
	}
}

// decodeRaw decodes a generator's raw results and adds them to w.
func decodeRaw(r io.Reader, w *rawWriter) error {
	dec := vegeta.NewDecoder(r)
	for {
		var res vegeta.Result
		if err := dec.Decode(&res); err != nil {
			_, _ = io.Copy(io.Discard, r)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		w.add(&res)
	}
}

// NoTarget is the --target of an instance that has no address yet (a
// pod a rollout will bring).
const NoTarget = "none"

// generateArgs are the arguments every generator of strategy name runs
// with, after "generate" and but for --generator and --experiment (see
// engine.LaunchSpec). A nil target is an instance that does not exist
// yet (--target none). endpoints, when set, is the address a generator
// that picks the instances itself (no hop) serves its endpoints API on
// (--endpoints-listen).
func generateArgs(exp *experiments.Experiment, name string, targets []*url.URL, hop *url.URL, upstreams map[string]int, start time.Time, conns int, raw bool, endpoints string) []string {
	args := []string{
		"--source", exp.Source,
		"--strategy", name,
		"--generators", strconv.Itoa(exp.Generators),
		"--duration", exp.Duration.String(),
		"--rate", strconv.FormatFloat(exp.Rate, 'g', -1, 64),
		"--seed", strconv.FormatUint(exp.Seed, 10),
		"--start", start.Format(time.RFC3339Nano),
		"--max-conns", strconv.Itoa(conns),
	}
	for _, t := range targets {
		if t == nil {
			args = append(args, "--target", NoTarget)
			continue
		}
		args = append(args, "--target", t.String())
	}
	if endpoints != "" && hop == nil {
		args = append(args, "--endpoints-listen", endpoints)
	}
	if hop != nil {
		args = append(args, "--proxy", hop.String())
		for _, u := range slices.Sorted(maps.Keys(upstreams)) {
			args = append(args, "--upstream", u+"="+strconv.Itoa(upstreams[u]))
		}
	}
	if raw {
		args = append(args, "--raw")
	}
	return args
}

// launcher returns what starts a distributed run's generators: the
// Launcher option, else local processes of the lbchaos executable; nil
// when the engine has neither.
func (e *Engine) launcher() engine.Launcher {
	switch {
	case e.opts.Launcher != nil:
		return e.opts.Launcher
	case e.opts.LbchaosBinary != "":
		return LocalLauncher{Binary: e.opts.LbchaosBinary, LeadTime: e.opts.GeneratorLead}
	}
	return nil
}

// LocalLauncher runs the generators as processes of this machine: Binary
// (the lbchaos executable) `generate`, the experiment on its standard
// input.
type LocalLauncher struct {
	Binary string
	// LeadTime is the time between launch and the shared start (default
	// DefaultGeneratorLead).
	LeadTime time.Duration
}

// Name implements engine.Launcher.
func (LocalLauncher) Name() string { return "local processes" }

// Lead implements engine.Launcher.
func (l LocalLauncher) Lead() time.Duration {
	if l.LeadTime <= 0 {
		return DefaultGeneratorLead
	}
	return l.LeadTime
}

// Launch implements engine.Launcher: generator g's progress goes to
// spec.Log prefixed with its index. When ctx is done each is interrupted,
// and killed if it has not ended spec.Grace later.
func (l LocalLauncher) Launch(ctx context.Context, spec engine.LaunchSpec) ([]engine.Generator, error) {
	gens := make([]engine.Generator, 0, spec.N)
	for g := range spec.N {
		p, err := l.start(ctx, spec, g)
		if err != nil {
			for _, started := range gens {
				started.(*generatorProc).kill()
			}
			return nil, fmt.Errorf("generator %d: %w", g, err)
		}
		gens = append(gens, p)
	}
	return gens, nil
}

func (l LocalLauncher) start(ctx context.Context, spec engine.LaunchSpec, g int) (*generatorProc, error) {
	args := append([]string{"generate", "--generator", strconv.Itoa(g), "--experiment", "-"}, spec.Args...)
	cmd := exec.CommandContext(ctx, l.Binary, args...)
	cmd.Stdin = bytes.NewReader(spec.Experiment)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = spec.Grace
	stderr := engine.NewGeneratorLog(spec.Log, g)
	cmd.Stderr = stderr
	endWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &generatorProc{index: g, cmd: cmd, stdout: stdout, stderr: stderr}, nil
}

// generatorProc is a running generator process.
type generatorProc struct {
	index  int
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr *engine.GeneratorLog
}

// Stream implements engine.Generator.
func (p *generatorProc) Stream() io.Reader { return p.stdout }

// kill ends a generator whose run never started.
func (p *generatorProc) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// Wait implements engine.Generator.
func (p *generatorProc) Wait(rerr error) error {
	werr := p.cmd.Wait()
	if werr != nil && p.cmd.ProcessState != nil && p.cmd.ProcessState.Success() {
		// Interrupted (Wait then returns the context's error), it ended
		// its stream and exited cleanly.
		werr = nil
	}
	if rerr == nil && werr == nil {
		return nil
	}
	var why []string
	if werr != nil {
		why = append(why, fmt.Sprintf("exited: %v", werr))
	}
	if rerr != nil {
		why = append(why, fmt.Sprintf("its results: %v", rerr))
	}
	msg := fmt.Sprintf("generator %d (pid %d): %s", p.index, p.cmd.Process.Pid, strings.Join(why, "; "))
	if last := p.stderr.Last(); last != "" {
		msg += "; its last words: " + last
	}
	return errors.New(msg)
}

// serviceNotes adds to coll the results of a kube:service strategy that
// neither an answer nor their connection named an instance for (a request
// whose connection was never answered: refused, reset or timed out before
// any answer), unattributed, and says how many there were.
func serviceNotes(name string, unnamed []engine.SeqOutcome, coll *engine.Collector) []string {
	for _, u := range unnamed {
		coll.Add(u.Outcome)
	}
	notes := []string{fmt.Sprintf("%s: a Kubernetes Service between the generator pods and the instances: kube-proxy's rules choose a ready pod per connection; the answer names the pod, and a request without one is the pod's that answered its connection before.", name)}
	if len(unnamed) > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d requests got no answer over a connection no pod had answered (a connect that failed or a first request cut off): they count in the totals but no pod's.", name, len(unnamed)))
	}
	return notes
}

// faultStarts is when each instance's first fault begins, in seconds from
// the attack's start (warm-ups, which model a joining instance, aside).
func faultStarts(exp *experiments.Experiment) map[int]float64 {
	out := map[int]float64{}
	for _, f := range exp.Faults {
		if f.Warmup {
			continue
		}
		at := f.At.Seconds()
		if t, ok := out[f.Instance]; !ok || at < t {
			out[f.Instance] = at
		}
	}
	return out
}

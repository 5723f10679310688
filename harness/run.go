// Package harness is the driver of an experiment: for each strategy in
// turn it has an engine measure it from a fresh state, and it assembles the
// one Summary of the run — the settings, every strategy's numbers, the
// derived metrics, the key metric, the expectations and every note.
//
// The seams it drives live in subpackages: engine (the Engine interface and
// what every engine shares: collector, schedule, keys, balancers), real and
// sim (the two engines), fleet (the Provider interface), process and docker
// (two providers), transport (the balancing RoundTripper), and proxies (real
// load balancers under test, with lbproxy, `lbchaos proxy`).
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Version is the lbchaos version recorded in summaries.
var Version = "dev"

// Progress is a snapshot of the attack in progress.
type Progress = engine.Progress

// Options configure a run.
type Options struct {
	// Engine measures each strategy; required.
	Engine engine.Engine
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Progress, when set, is called about once a second during each attack
	// (engines that take time to run), instead of periodic lines on Log.
	Progress func(Progress)
	// Advisory: the run's load is not the experiment file's (its duration
	// or rate was overridden), so its expectations are shown but do not
	// fail the run.
	Advisory bool
	// Ready, when set, is called once the engine has accepted the
	// experiment, before the first strategy (the command creates its
	// output directory there); its error ends the run with a nil summary.
	Ready func() error
}

// ErrInterrupted is returned (wrapped) with a partial summary when the run's
// context was cancelled before every strategy finished.
var ErrInterrupted = errors.New("run interrupted")

// ExpectationsFailed is Run's error when every strategy ran but some of the
// experiment's expectations did not hold (and they were not advisory).
type ExpectationsFailed struct{ Failed, Total int }

func (e *ExpectationsFailed) Error() string {
	return fmt.Sprintf("%d of %d expectations failed", e.Failed, e.Total)
}

// Run measures exp's strategies one after another with opts.Engine and
// returns the summary, complete with derived metrics, key metric,
// expectations and notes.
//
// The error contract is one for every engine. An experiment the engine
// cannot run (or a Ready that fails) ends the run before anything starts,
// with a nil summary. When ctx is
// cancelled the strategy in progress stops (whatever it was doing: starting
// backends, attacking, draining), and Run returns what was measured so far
// with Partial set and an error wrapping ErrInterrupted. On
// any other error during a strategy, Run returns the strategies measured so
// far (the failing one too, marked partial, if its attack had started) and
// an error naming the strategy. When one of the experiment's abort
// conditions trips, the strategies after the one it stopped are skipped
// and the error is an *Aborted (the summary's Abort says what tripped).
// When the run completes but expectations fail, the error is an
// *ExpectationsFailed.
func Run(ctx context.Context, exp *experiments.Experiment, opts Options) (*reports.Summary, error) {
	if opts.Engine == nil {
		return nil, errors.New("harness: no engine")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	notes, err := opts.Engine.Check(exp)
	if err != nil {
		return nil, err
	}
	info := opts.Engine.Info()
	sum := newSummary(exp, info)
	sum.Notes = append(sum.Notes, notes...)
	// The strategies the engine skips are noted up front and left out of
	// the numbering, so "[i/n]" counts only the strategies that run.
	skip := make([]string, len(exp.Strategies))
	runs := len(exp.Strategies)
	if sk, ok := opts.Engine.(engine.Skipper); ok {
		var skipped []string
		for i, name := range exp.Strategies {
			if skip[i] = sk.Skip(exp, name); skip[i] != "" {
				runs--
				skipped = append(skipped, skip[i])
			}
		}
		for _, n := range reports.MergeNotes(skipped) {
			fmt.Fprintf(opts.Log, "skipped %s\n", n)
		}
		sum.Notes = append(sum.Notes, skipped...)
		if runs == 0 {
			return nil, nothingRun(skipped)
		}
	}
	if opts.Ready != nil {
		if err := opts.Ready(); err != nil {
			return nil, err
		}
	}
	var runErr error
	var aborted *Aborted
	pos := 0
	for i, name := range exp.Strategies {
		if ctx.Err() != nil {
			break
		}
		if skip[i] != "" {
			continue
		}
		pos++
		rate := fmt.Sprintf("%g req/s (%s)", exp.Rate, exp.Arrival)
		if exp.Profile != nil {
			rate = fmt.Sprintf("a mean %.6g req/s (%s, rate stages up to %.6g)", exp.Rate, exp.Arrival, exp.PeakRate())
		}
		fmt.Fprintf(opts.Log, "[%d/%d] %s: %v at %s against %d %s backends\n",
			pos, runs, name, exp.Duration, rate, exp.Instances.Count, info.Backends)
		job := engine.Job{Exp: exp, Index: i, Pos: pos, Of: runs, Log: opts.Log, Progress: opts.Progress}
		wall := time.Now()
		m, err := opts.Engine.Measure(ctx, job)
		if m != nil && m.Skipped != "" {
			fmt.Fprintf(opts.Log, "      skipped: %s\n", m.Skipped)
			sum.Notes = append(sum.Notes, m.Skipped)
			continue
		}
		if m != nil {
			st, notes := strategyOf(exp, name, m)
			sum.Strategies = append(sum.Strategies, st)
			sum.Notes = append(sum.Notes, notes...)
			fmt.Fprintf(opts.Log, "      done: %d requests, %.2f%% errors, p50 %.1f ms, p99 %.1f ms%s%s\n",
				st.Requests, 100*st.ErrorRatio, st.LatencyMs.P50, st.LatencyMs.P99, wallNote(info, wall), harnessNote(st.Harness))
			if m.Abort != nil {
				aborted = abortRun(sum, exp, skip, i, m.Abort, opts.Log)
			}
			if err == nil && m.Interrupted {
				break
			}
		}
		if err != nil {
			sum.Partial = sum.Partial || m != nil
			if ctx.Err() != nil {
				// Cut short by the interrupt (a fleet starting, a proxy
				// coming up): the run was interrupted, as below.
				break
			}
			runErr = fmt.Errorf("strategy %s: %w", name, err)
			break
		}
	}
	if runErr == nil && ctx.Err() == nil && len(sum.Strategies) == 0 {
		return nil, nothingRun(sum.Notes[len(notes):])
	}
	sum.Glossary = glossaryOf(sum.Strategies)
	reports.Derive(sum)
	sum.HarnessSaturated = reports.HarnessSaturations(sum)
	if runErr == nil && ctx.Err() != nil {
		sum.Partial = true
		sum.Notes = append(sum.Notes, fmt.Sprintf("The run was interrupted: %d of %d strategies measured; the last one only in part.",
			len(sum.Strategies), runs))
		runErr = fmt.Errorf("%w: %d of %d strategies measured", ErrInterrupted, len(sum.Strategies), runs)
	}
	failed := finish(sum, exp, opts.Advisory)
	if runErr == nil && aborted != nil {
		runErr = aborted
	}
	if runErr == nil && failed > 0 && !opts.Advisory {
		runErr = &ExpectationsFailed{Failed: failed, Total: len(sum.Expectations)}
	}
	return sum, runErr
}

// nothingRun is the error of a run in which the engine left out every
// strategy, for the reasons given: an empty table with exit status 0
// would pass for a result.
func nothingRun(reasons []string) error {
	return fmt.Errorf("no strategy was measured: every one was left out (%s); run strategies this engine can measure (--strategies), or another engine",
		strings.Join(reports.MergeNotes(reasons), " "))
}

// wallNote says how long a virtual engine took to simulate a strategy.
func wallNote(info engine.Info, wall time.Time) string {
	if info.Virtual {
		return fmt.Sprintf(" (simulated in %.2f s)", time.Since(wall).Seconds())
	}
	return ""
}

// harnessNote says on the done line that the harness saturated.
func harnessNote(h *reports.Harness) string {
	if h == nil || !h.Saturated || h.SaturatedFromS == nil {
		return ""
	}
	return fmt.Sprintf("; the harness saturated from %g s on", *h.SaturatedFromS)
}

// finish completes sum with what follows from the experiment: the key
// metric, the expectations checked, and the advisory note. It returns how
// many expectations failed.
func finish(sum *reports.Summary, exp *experiments.Experiment, advisory bool) (failed int) {
	sum.KeyMetric = exp.KeyMetric
	sum.Expectations, failed = CheckExpectations(exp, sum)
	// The file's expectations describe the file's load: with another
	// duration or rate they are shown but do not decide the outcome.
	if advisory && len(sum.Expectations) > 0 {
		sum.ExpectationsAdvisory = true
		sum.Notes = append(sum.Notes, "The expectations were written for the experiment file's duration and rate; this run overrode them, so they are advisory.")
	}
	return failed
}

// strategyOf turns an engine's measurement into the summary's entry for
// strategy name, and returns the notes that come with it.
func strategyOf(exp *experiments.Experiment, name string, m *engine.Measurement) (reports.Strategy, []string) {
	s := m.Strategy
	s.ElapsedS = m.Elapsed.Seconds()
	if m.Elapsed > 0 {
		s.AchievedRate = float64(m.Sent) / m.Elapsed.Seconds()
	}
	s.GeneratorBehind = float64(m.Sent) < 0.99*float64(m.Scheduled) || m.GeneratorBehind
	s.Ejections = m.Ejections
	s.Retry = m.Retry
	// A proxy's or grpc-go's ejections happen where the harness cannot see.
	observed := !proxyspec.IsProxy(name) && !strategies.IsGRPC(name)
	s.EjectionsObserved = &observed
	s.Events = m.Events
	s.Partial = m.Interrupted
	s.Harness = m.Harness

	notes := append([]string(nil), m.Notes...)
	notes = append(notes, incidentNotes(name, m.Events)...)
	if s.GeneratorBehind {
		notes = append(notes, fmt.Sprintf("%s: the generator fell behind: %d requests sent where the schedule had %d (%.1f%%); send lag p99 %.1f ms, max %.1f ms. Numbers for this strategy understate the intended load.",
			name, m.Sent, m.Scheduled, 100*float64(m.Sent)/float64(m.Scheduled), s.SendLagMs.P99, s.SendLagMs.Max))
	}
	if m.CapHits > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d requests found their instance at the bound of %d connections and queued in the client; their latency includes that wait.",
			name, m.CapHits, m.ConnBound))
	}
	if m.Aborted > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d requests in flight when the run was interrupted were cancelled and are not counted.", name, m.Aborted))
	}
	// Through a Service, what no pod answered has a note of its own
	// (serviceNotes): no strategy of the harness's picked.
	if m.Unattributed > 0 && !proxyspec.IsService(name) {
		notes = append(notes, fmt.Sprintf("%s: %d requests reached no instance: the strategy allowed none (every instance ejected: \"no healthy upstream\") or they failed before a pick. They count as errors, attributed to no instance.", name, m.Unattributed))
	}
	if m.EventDrops > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d ejection events beyond the first %d were not recorded.", name, m.EventDrops, engine.MaxEvents))
	}
	return s, notes
}

// newSummary starts the summary of a run of exp on an engine described by
// info: the settings, and no strategies yet.
func newSummary(exp *experiments.Experiment, info engine.Info) *reports.Summary {
	sum := &reports.Summary{
		Schema:          reports.Schema,
		Experiment:      exp.Name,
		Engine:          info.Engine,
		Backends:        info.Backends,
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
	if exp.Generators > 1 {
		sum.Generators = exp.Generators
	}
	if p := exp.Profile; p != nil {
		sum.RateProfile = &reports.RateProfile{Start: p.Start}
		for _, st := range p.Stages {
			sum.RateProfile.Stages = append(sum.RateProfile.Stages, reports.RateStage{DurationS: st.Duration.Seconds(), Target: st.Target})
		}
	}
	if info.Virtual {
		// A simulated summary depends on the experiment alone.
		sum.Started, sum.GoVersion, sum.CPUs = info.Epoch, "", 0
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

// Package engine is the engine seam: how one strategy is measured. The
// driver (package harness) owns the strategy loop, the fresh state per
// strategy, the summary and the notes every engine shares; an Engine
// measures one strategy at a time and returns a Measurement.
//
// Two engines implement it, each in its own package: harness/live (Vegeta's
// open-loop load through the transport client to real backends of a
// fleet.Provider) and harness/sim (the same model in virtual time). What
// both need is here too: the result collector, the arrival schedule, the
// request keys, and the balancers built the same way for either; and, for
// a load spread over several generators (generators: N), each generator's
// share of the schedule (Stride), the stream that carries a generator's
// results (StreamWriter) and the Merger that merges the streams exactly.
package engine

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// Engine measures an experiment's strategies one at a time.
type Engine interface {
	// Info names the engine and its backends, for the summary.
	Info() Info
	// Check rejects, before anything runs, an experiment this engine
	// cannot run (a container fault on backends without containers, a
	// proxy that is not installed), and returns notes that hold for the
	// whole run.
	Check(exp *experiments.Experiment) (notes []string, err error)
	// Measure runs strategy job.Index of job.Exp from a fresh state: new
	// backends, schedule and collector. An error that ends a strategy after
	// its attack started comes with what was measured so far
	// (Measurement.Interrupted); an error before that, with nil. When ctx
	// is cancelled during the attack, the attack stops, the requests still
	// in flight are left out as aborted, and Measure returns the partial
	// measurement with no error; cancelled before the attack, it may return
	// the cancellation as an error, which the driver reads as the
	// interrupt. A strategy this engine does not run comes back with
	// Skipped.
	Measure(ctx context.Context, job Job) (*Measurement, error)
}

// Info describes an engine for the summary.
type Info struct {
	Engine   string // summary.json "engine": "real", "sim"
	Backends string // summary.json "backends": "process", "docker", "sim"
	// Virtual engines run in simulated time from Epoch: the summary's
	// Started is Epoch and it records nothing of the machine (Go version,
	// CPUs), so that it depends on the experiment alone.
	Virtual bool
	Epoch   time.Time
}

// Job is one strategy to measure.
type Job struct {
	Exp   *experiments.Experiment
	Index int // in Exp.Strategies
	// Pos and Of number the strategy among those the run measures (1-based;
	// strategies the engine skips are not counted), for progress lines.
	// Zero values mean Index+1 of len(Exp.Strategies).
	Pos, Of int
	// Log receives the engine's own progress lines; never nil.
	Log io.Writer
	// Progress, when set, is called about once a second during the attack.
	Progress func(Progress)
}

// Skipper is an Engine that leaves some strategies out (the simulator:
// real proxies). Skip says why it would not run strategy name of exp, ""
// when it would; the driver asks before anything runs, so that progress
// counts only the strategies that run. Measure still returns such a
// strategy with Measurement.Skipped.
type Skipper interface {
	Skip(exp *experiments.Experiment, name string) string
}

// Name is the strategy's name as the experiment writes it.
func (j Job) Name() string { return j.Exp.Strategies[j.Index] }

// Position is the strategy's place among those the run measures and
// their count: Pos and Of, or Index+1 and len(Exp.Strategies) without them.
func (j Job) Position() (pos, of int) {
	if j.Of > 0 {
		return j.Pos, j.Of
	}
	return j.Index + 1, len(j.Exp.Strategies)
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

// Measurement is what an engine measured of one strategy. The driver turns
// it into the summary's entry: achieved rate, generator behind, events,
// partial flag and the notes every engine shares.
type Measurement struct {
	// Strategy is the collector's view (Collector.Strategy) with the
	// instances' utilization set where the engine knows it.
	Strategy reports.Strategy
	// Sent is how many requests were sent; Scheduled how many the arrival
	// schedule had for Elapsed. The generator fell behind when Sent is
	// below 99% of Scheduled.
	Sent      int64
	Scheduled uint64
	// GeneratorBehind is set by a distributed run when any of its
	// generators sent less than 99% of its own share of the schedule.
	GeneratorBehind bool
	// Elapsed is how long the attack sent requests: its duration, or until
	// it was interrupted.
	Elapsed     time.Duration
	Interrupted bool
	// Ejections and Events are the balancers' (0 and none for a proxy,
	// whose own are not observed); EventDrops counts events past MaxEvents.
	Ejections  int
	Events     []reports.Event
	EventDrops int
	// Retry counts the retry and hedge policy's decisions, summed over
	// the balancers; nil without a policy.
	Retry *reports.RetryStats
	// Aborted counts requests cancelled by an interrupt and left out;
	// Unattributed those that reached no instance.
	Aborted, Unattributed int64
	// ConnBound is the client's connection bound per instance, and
	// CapHits how many requests waited at it (0 when none did).
	ConnBound int
	CapHits   int64
	// Harness is the load generator's own health during the attack, with
	// its verdict; nil when the engine does not measure it.
	Harness *reports.Harness
	// Notes are the engine's own notes on this strategy.
	Notes []string
	// Skipped, when not empty, says why the engine did not run the
	// strategy; nothing else is set.
	Skipped string
	// Abort, when set, is the abort condition (AbortWatch) that stopped
	// the attack: the load stopped, the requests in flight were left out
	// as aborted, every fault was healed, and Interrupted is set with
	// Elapsed the time it tripped. The driver runs no further strategy.
	Abort *reports.Abort
}

// ErrNoHost fails a request for which the strategy allowed no instance
// (every instance ejected, no panic threshold).
var ErrNoHost = errors.New("no healthy upstream: the strategy allowed no instance")

// Package sim is the simulated engine: the real engine's model — arrival
// schedule, strategies, instances with their queues and faults — run as a
// discrete-event simulation in virtual time.
package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Epoch, the Unix epoch, is the virtual clock's reading at the start of
// every strategy's simulated attack, and the Started time of every simulated
// summary.
var Epoch = time.Unix(0, 0).UTC()

// errSimReset is the transport error of a request whose connection the
// simulated instance reset (fault modes reset and kill).
var errSimReset = errors.New("simulated connection reset by peer")

// Engine simulates each strategy in virtual time and measures it as the
// real engine would against in-process backends. Its summaries have Engine
// and Backends "sim", Started the Unix epoch, and no GoVersion or CPUs: a
// simulated summary depends on nothing but the experiment (seed included)
// and the lbchaos version, so the same experiment gives a byte-identical
// summary.json on any machine of the same architecture. Each strategy
// starts from a fresh state: new instances, a new arrival schedule, a new
// collector.
//
// The model is the real engine's (see the sim type): the arrival schedule
// of engine.NewSchedule, the strategies of package strategies built by
// engine.NewBalancers exactly as the real engine builds them but on a
// virtual clock, and instances that draw service times and fault plans
// from the sources the real servers would seed. Container faults (pause,
// kill, cpu) are simulated by their Plan. The generator never falls behind,
// so send lag is 0 and the generator is never behind. With generators: N
// the load is split as a real distributed run splits it, through the same
// stream and merge (see simGenerator).
//
// When ctx is cancelled the strategy in progress stops at the current
// virtual instant and its requests still in flight are left out as aborted.
//
// With a Calibration, every request sent to an instance also spends the
// transport overhead a real run measured (see Calibration); without one,
// none, and the engine is the one described above.
type Engine struct {
	Calibration *Calibration // nil: uncalibrated
}

var (
	_ engine.Engine  = Engine{}
	_ engine.Skipper = Engine{}
)

// Info implements engine.Engine.
func (Engine) Info() engine.Info {
	return engine.Info{Engine: "sim", Backends: "sim", Virtual: true, Epoch: Epoch}
}

// Check implements engine.Engine: every experiment runs but one with
// external instances and no model of them (instances.service); one with
// container faults gets a note on how they are approximated.
func (Engine) Check(exp *experiments.Experiment) ([]string, error) {
	notes, err := check(exp)
	if err != nil {
		return nil, err
	}
	if exp.Instances.Kube.Rollout != nil {
		notes = append(notes, RolloutNote)
	}
	return append(notes, protocolNotes(exp)...), nil
}

// RolloutNote is the simulator's note on an experiment with a
// Deployment's rolling restart.
const RolloutNote = "instances.kube.rollout: the simulator has no Deployment, and models neither the pods' starts and readiness nor the endpoints' propagation: " +
	"its numbers are those of the same load with no rolling restart, a baseline; run --backends kube for the rollout."

func check(exp *experiments.Experiment) ([]string, error) {
	if !exp.Instances.Modeled() && !exp.Instances.Foreign() {
		return nil, fmt.Errorf("%s: instances.service: is required to simulate the instances, e.g. service: {dist: fixed, value: 10ms}; "+
			"without one the file runs only against instances that already run (--engine real with --backend URL, one per instance)", exp.Source)
	}
	if !exp.Instances.Modeled() && exp.Instances.App != nil {
		return nil, fmt.Errorf("%s: instances.app: the simulator cannot model a service it does not know (%s); "+
			"give instances.service (a model of its service time) to simulate it, or run it with --engine real", exp.Source, exp.Instances.App.Image)
	}
	if !exp.Instances.Modeled() {
		return nil, fmt.Errorf("%s: instances.external: the simulator cannot model instances it did not start; "+
			"give instances.service (a model of their service time) to simulate them, or run them with --engine real", exp.Source)
	}
	if exp.Instances.App != nil {
		return []string{fmt.Sprintf("The instances are your image %s; the simulator runs the experiment's model of it (instances.service, and the default workers), not the service itself.", exp.Instances.App.Image)}, nil
	}
	if len(exp.Instances.External) > 0 {
		return []string{"The instances are external; the simulator runs the experiment's model of them (instances.service, workers, queue_limit), not the instances themselves."}, nil
	}
	if exp.NeedsContainers() {
		return []string{"Container faults are simulated by their effect on the requests that arrive while they last: " +
			"pause as a hang, kill as a connection reset, cpu as a service time scaled by 1/cpus. " +
			"Requests already in the instance when such a fault starts are not affected."}, nil
	}
	return nil, nil
}

// Measures reports whether the simulator measures at least one of exp's
// strategies (Skip leaves none out): an experiment whose faults it does not
// model runs only with the real engine.
func Measures(exp *experiments.Experiment) bool {
	for _, name := range exp.Strategies {
		if (Engine{}).Skip(exp, name) == "" {
			return true
		}
	}
	return false
}

// Skip implements engine.Skipper: no strategy of an experiment with a
// fault the simulator does not model (faultyserver.Unmodeled), and no real
// proxy strategy or gRPC one (grpc-go's own balancer), is simulated.
func (Engine) Skip(exp *experiments.Experiment, name string) string {
	for i, f := range exp.Faults {
		if why := faultyserver.Unmodeled(f.Spec); why != "" {
			return fmt.Sprintf("%s: faults[%d]: %s; it runs only with the real engine (--engine real).", name, i, why)
		}
	}
	switch {
	case proxyspec.IsService(name):
		return fmt.Sprintf("%s: kube-proxy's rules run only on a real cluster (--engine real --backends kube), and their timing (endpoint propagation, each sync) is not modelled; list random+pinned beside it for the simulator's model of a Service's per-connection choice.", name)
	case proxyspec.IsProxy(name):
		return fmt.Sprintf("%s: a real proxy runs only with the real engine (--engine real); it is left out of the simulation.", name)
	case strategies.IsGRPC(name):
		return fmt.Sprintf("%s: grpc-go's own balancer runs only with the real engine (--engine real); it is left out of the simulation.", name)
	}
	return ""
}

// Measure implements engine.Engine. A strategy Skip names is skipped.
func (e Engine) Measure(ctx context.Context, job engine.Job) (*engine.Measurement, error) {
	name := job.Name()
	if why := e.Skip(job.Exp, name); why != "" {
		return &engine.Measurement{Skipped: why}, nil
	}
	return simCalibrated(ctx, job.Exp, name, simHooks{}, e.Calibration)
}

// simStrategy simulates one strategy from a fresh state, uncalibrated.
func simStrategy(ctx context.Context, exp *experiments.Experiment, name string, hooks simHooks) (*engine.Measurement, error) {
	return simCalibrated(ctx, exp, name, hooks, nil)
}

// simCalibrated simulates one strategy from a fresh state, with the
// calibration cal when not nil.
func simCalibrated(ctx context.Context, exp *experiments.Experiment, name string, hooks simHooks, cal *Calibration) (*engine.Measurement, error) {
	events := engine.NewEventLog(Epoch)
	s, err := newSim(exp, name, hooks, events)
	if err != nil {
		return nil, err
	}
	if cal != nil {
		if s.cal, err = newCalibrated(cal, name, exp.Seed); err != nil {
			return nil, fmt.Errorf("calibration %s: %s: %w", cal.From, name, err)
		}
	}
	interrupted := s.run(ctx.Done())
	elapsed := exp.Duration
	if interrupted {
		s.abortWaiting()
		elapsed = min(elapsed, s.clock.now)
	}
	m, err := s.measure(exp, name, elapsed, interrupted)
	if err != nil {
		return nil, err
	}
	if a := s.abort.tripped; a != nil {
		m.Abort = a
		m.Notes = append(m.Notes, abortNotes(name, a)...)
	}
	if len(s.gens) == 1 && s.gens[0].stream == nil {
		m.Events, m.EventDrops = events.Sorted()
	}
	span := max(elapsed, s.clock.now) // until the last request ended
	for i := range s.insts {
		engine.SetUtilization(&m.Strategy.Instances[i], s.insts[i].busyFor.Seconds(), s.insts[i].workers, span)
	}
	return m, nil
}

// simClock is the strategies' clock in a simulation: Epoch plus the
// virtual time elapsed since the start of the attack.
type simClock struct{ now time.Duration }

func (c *simClock) Now() time.Time { return Epoch.Add(c.now) }

// simHooks let tests observe the engine; the zero value observes nothing.
type simHooks struct {
	// result sees every request's outcome as the collector and the strategy
	// see it.
	result func(o engine.Outcome, so strategies.Outcome)
	// second is called at every whole virtual second after 0.
	second func(now time.Duration)
	// stream sends the outcomes through a generator's stream, encoded,
	// decoded and merged, also with one generator.
	stream bool
	// final sees the collector the measurement came from, finished (the
	// merged one when streamed).
	final func(*engine.Collector)
	// hdrLog keeps the collectors' HdrHistogram log (Collector.WriteHDRLog),
	// which a simulation otherwise skips, for final to read.
	hdrLog bool
}

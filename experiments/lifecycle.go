package experiments

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// An instance's life on Kubernetes: instances.readiness (the pods'
// readiness probe), instances.shutdown (how an instance stops) and
// instances.kube (the workload that runs them, a Service, a rolling
// restart).

// fileReadiness is instances.readiness.
type fileReadiness struct {
	Path             string `yaml:"path"`
	Period           string `yaml:"period"`
	Timeout          string `yaml:"timeout"`
	FailureThreshold *int   `yaml:"failure_threshold"`
	SuccessThreshold *int   `yaml:"success_threshold"`
}

// fileShutdown is instances.shutdown.
type fileShutdown struct {
	Mode             string `yaml:"mode"`
	Delay            string `yaml:"delay"`
	PreStopSleep     string `yaml:"pre_stop_sleep"`
	TerminationGrace string `yaml:"termination_grace"`
}

// fileKube is instances.kube.
type fileKube struct {
	Workload string       `yaml:"workload"`
	Service  bool         `yaml:"service"`
	Rollout  *fileRollout `yaml:"rollout"`
}

// fileRollout is instances.kube.rollout. max_surge and max_unavailable
// are a number or a percentage, as Kubernetes' IntOrString: nodes, read
// by build.
type fileRollout struct {
	At             string    `yaml:"at"`
	MaxSurge       yaml.Node `yaml:"max_surge"`
	MaxUnavailable yaml.Node `yaml:"max_unavailable"`
}

// buildLifecycle fills in.Readiness, in.Shutdown and in.Kube with their
// defaults; Validate checks their ranges.
func (f *fileFleet) buildLifecycle(in *Instances) error {
	var err error
	if r := f.Readiness; r != nil {
		in.Readiness = &Readiness{
			Path:             cmp.Or(r.Path, f.Health, faultyserver.HealthPath),
			FailureThreshold: DefaultFailureThreshold,
			SuccessThreshold: DefaultSuccessThreshold,
		}
		if in.Readiness.Period, err = duration("instances.readiness.period", r.Period, DefaultReadinessPeriod); err != nil {
			return err
		}
		if in.Readiness.Timeout, err = duration("instances.readiness.timeout", r.Timeout, DefaultReadinessTimeout); err != nil {
			return err
		}
		if r.FailureThreshold != nil {
			in.Readiness.FailureThreshold = *r.FailureThreshold
		}
		if r.SuccessThreshold != nil {
			in.Readiness.SuccessThreshold = *r.SuccessThreshold
		}
	}

	in.Shutdown = Shutdown{Shutdown: faultyserver.Shutdown{Mode: DefaultShutdownMode}, TerminationGrace: DefaultTerminationGrace}
	if s := f.Shutdown; s != nil {
		in.Shutdown.Mode = cmp.Or(s.Mode, DefaultShutdownMode)
		if in.Shutdown.Delay, err = duration("instances.shutdown.delay", s.Delay, 0); err != nil {
			return err
		}
		if in.Shutdown.PreStopSleep, err = duration("instances.shutdown.pre_stop_sleep", s.PreStopSleep, 0); err != nil {
			return err
		}
		if in.Shutdown.TerminationGrace, err = duration("instances.shutdown.termination_grace", s.TerminationGrace, DefaultTerminationGrace); err != nil {
			return err
		}
	}

	in.Kube = Kube{Workload: DefaultWorkload}
	if k := f.Kube; k != nil {
		in.Kube.Workload = cmp.Or(k.Workload, DefaultWorkload)
		in.Kube.Service = k.Service
		if r := k.Rollout; r != nil {
			ro := &Rollout{}
			if ro.At, err = duration("instances.kube.rollout.at", r.At, 0); err != nil {
				return err
			}
			if ro.MaxSurge, err = intOrPercent("instances.kube.rollout.max_surge", &r.MaxSurge, DefaultMaxSurge); err != nil {
				return err
			}
			if ro.MaxUnavailable, err = intOrPercent("instances.kube.rollout.max_unavailable", &r.MaxUnavailable, DefaultMaxUnavailable); err != nil {
				return err
			}
			in.Kube.Rollout = ro
		}
	}
	return nil
}

// intOrPercent reads a number or a percentage (1, 25%) as text, def when
// n is absent; Validate checks it.
func intOrPercent(field string, n *yaml.Node, def string) (string, error) {
	switch {
	case n.Kind == 0 || isNull(n):
		return def, nil
	case n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!str" || n.Tag == "!!float"):
		return n.Value, nil
	}
	return "", fieldErr(field, "want a whole number >= 0 or a percentage such as 25%%, got %s", describe(n))
}

// validateLifecycle checks instances.readiness, instances.shutdown and
// instances.kube; the rollout's start against the run's duration when
// that is valid.
func (e *Experiment) validateLifecycle() error {
	in := e.Instances
	var errs []error
	if r := in.Readiness; r != nil {
		err := r.validate()
		if err == nil && in.App == nil && len(in.External) == 0 && r.Path != faultyserver.HealthPath {
			err = fieldErr("instances.readiness.path", "the fake server answers its health check at %s only, and serves any other path as a request: a probe of %q would count as load and pass whatever the instance's health; probe %s (leave path out)",
				faultyserver.HealthPath, r.Path, faultyserver.HealthPath)
		}
		errs = append(errs, err)
	}
	errs = append(errs, in.Shutdown.validate())
	errs = append(errs, in.Kube.validate(e.Duration))
	if in.Kube.Workload == WorkloadDeployment {
		switch {
		case slices.ContainsFunc(in.Each, func(x Instance) bool { return !reflect.DeepEqual(x, in.Each[0]) }):
			errs = append(errs, fieldErr("instances.groups", "a Deployment's pods share one template (instances.kube.workload: %s): give every instance the same settings (no groups), or use workload: %s", WorkloadDeployment, WorkloadPods))
		case len(in.External) > 0:
			errs = append(errs, fieldErr("instances.kube.workload", "%s starts the instances as a Deployment; instances.external lists instances that already run", WorkloadDeployment))
		case len(in.Joining()) > 0:
			errs = append(errs, fieldErr("instances.kube.workload", "%s: a Deployment's pods all start at once; instances that join later need workload: %s", WorkloadDeployment, WorkloadPods))
		case in.App != nil:
			errs = append(errs, fieldErr("instances.app", "runs as pods (workload: %s); a Deployment of your image is not supported yet", WorkloadPods))
		}
		errs = append(errs, e.deploymentFaults()...)
	}
	return errors.Join(errs...)
}

// deploymentFaults checks the faults of a Deployment's instances: a
// container fault would act on a pod the Deployment owns (a killed pod is
// replaced by a new one, not brought back), a network fault acts on this
// host's ports, which no pod has, and with a rolling restart a server
// fault must end before it, since the pod it acts on is replaced.
func (e *Experiment) deploymentFaults() []error {
	var errs []error
	r := e.Instances.Kube.Rollout
	for i, f := range e.Faults {
		_, entry := f.where(i)
		switch {
		case faultyserver.IsContainerFault(f.Spec):
			errs = append(errs, fieldErr(entry+".fault.mode", "%s acts on a container, and a Deployment's pods are its own (workload: %s): run it with workload: %s", f.Spec.Mode(), WorkloadDeployment, WorkloadPods))
		case faultyserver.IsNetworkFault(f.Spec):
			errs = append(errs, fieldErr(entry+".fault.mode", "%q needs the instance's port in this host's network namespace; a Deployment's pods (workload: %s) have their own", f.Spec.Mode(), WorkloadDeployment))
		case r != nil && (f.Until == 0 || f.Until > r.At):
			errs = append(errs, fieldErr(entry+".until", "must end by instances.kube.rollout.at (%v): the rolling restart replaces the pod the fault acts on", r.At))
		}
	}
	return errs
}

func (r *Readiness) validate() error {
	switch {
	case !strings.HasPrefix(r.Path, "/") || strings.HasPrefix(r.Path, "//"):
		return fieldErr("instances.readiness.path", "must be a path starting with /, got %q", r.Path)
	case strings.HasPrefix(r.Path, faultyserver.ControlPrefix) || r.Path+"/" == faultyserver.ControlPrefix:
		return fieldErr("instances.readiness.path", "%q is under the control API (%s), which answers only requests that carry the run's token, and a probe carries none; probe %s",
			r.Path, faultyserver.ControlPrefix, faultyserver.HealthPath)
	}
	if err := probeSeconds("instances.readiness.period", r.Period); err != nil {
		return err
	}
	if err := probeSeconds("instances.readiness.timeout", r.Timeout); err != nil {
		return err
	}
	switch {
	case r.FailureThreshold < 1:
		return fieldErr("instances.readiness.failure_threshold", "must be >= 1 (failed probes in a row that take the pod out), got %d", r.FailureThreshold)
	case r.SuccessThreshold < 1:
		return fieldErr("instances.readiness.success_threshold", "must be >= 1 (passed probes in a row that put the pod back), got %d", r.SuccessThreshold)
	}
	return nil
}

// probeSeconds checks a duration Kubernetes takes in whole seconds, at
// least one.
func probeSeconds(field string, d time.Duration) error {
	if d < time.Second || d%time.Second != 0 {
		return fieldErr(field, "must be a whole number of seconds, at least 1s (Kubernetes takes it in seconds), got %v", d)
	}
	return nil
}

func (s Shutdown) validate() error {
	if err := s.Shutdown.Validate(); err != nil {
		return fmt.Errorf("instances.shutdown.%w", err)
	}
	switch d := s.PreStopSleep; {
	case d < 0 || d%time.Second != 0:
		return fieldErr("instances.shutdown.pre_stop_sleep", "must be a whole number of seconds >= 0 (Kubernetes takes a preStop sleep in seconds), got %v", d)
	case d > faultyserver.MaxShutdownDelay:
		return fieldErr("instances.shutdown.pre_stop_sleep", "must be at most %v, got %v", faultyserver.MaxShutdownDelay, d)
	}
	if g := s.TerminationGrace; g < time.Second || g%time.Second != 0 {
		return fieldErr("instances.shutdown.termination_grace", "must be a whole number of seconds, at least 1s (Kubernetes takes a pod's grace period in seconds), got %v", g)
	}
	if s.Delay+s.PreStopSleep >= s.TerminationGrace {
		return fieldErr("instances.shutdown.termination_grace", "%v is not longer than delay %v + pre_stop_sleep %v: a shutdown delay longer than the grace period, "+
			"at whose end the kubelet kills the pod; make termination_grace longer than their sum", s.TerminationGrace, s.Delay, s.PreStopSleep)
	}
	return nil
}

func (k Kube) validate(runDuration time.Duration) error {
	if k.Workload != WorkloadPods && k.Workload != WorkloadDeployment {
		return fieldErr("instances.kube.workload", "want %s or %s, got %q", WorkloadPods, WorkloadDeployment, k.Workload)
	}
	r := k.Rollout
	if r == nil {
		return nil
	}
	switch {
	case k.Workload != WorkloadDeployment:
		return fieldErr("instances.kube.rollout", "needs workload: %s (a rolling restart replaces a Deployment's pods; workload %s has none)", WorkloadDeployment, k.Workload)
	case r.At < 0:
		return fieldErr("instances.kube.rollout.at", "must be >= 0, got %v", r.At)
	case runDuration > 0 && r.At >= runDuration:
		return fieldErr("instances.kube.rollout.at", "%v is not before the end of the run (duration %v)", r.At, runDuration)
	}
	surge, err := parseIntOrPercent(r.MaxSurge)
	if err != nil {
		return fieldErr("instances.kube.rollout.max_surge", "%v", err)
	}
	unavailable, err := parseIntOrPercent(r.MaxUnavailable)
	if err != nil {
		return fieldErr("instances.kube.rollout.max_unavailable", "%v", err)
	}
	if surge == 0 && unavailable == 0 {
		return fieldErr("instances.kube.rollout", "max_surge and max_unavailable are both 0, which Kubernetes refuses: the rollout could neither add a pod nor take one down")
	}
	return nil
}

// parseIntOrPercent reads a rollout's max_surge or max_unavailable: a
// whole number >= 0 ("1") or a percentage from 0% to 100% ("25%").
func parseIntOrPercent(s string) (int, error) {
	digits, percent := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(digits)
	switch {
	case err != nil || n < 0 || strings.HasPrefix(digits, "+") || strings.HasPrefix(digits, "-"):
		return 0, fmt.Errorf("want a whole number >= 0 or a percentage such as 25%%, got %q", s)
	case percent && n > 100:
		return 0, fmt.Errorf("a percentage must be within 0%% and 100%%, got %q", s)
	}
	return n, nil
}

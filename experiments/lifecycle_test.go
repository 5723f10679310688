package experiments

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// lifecycleFile is an experiment file of 30 s whose instances add extra.
func lifecycleFile(extra string) string {
	return "name: t\nduration: 30s\nrate: 10\nstrategies: [round-robin]\ninstances:\n  count: 4\n  service: {dist: fixed, value: 1ms}\n" + extra
}

func TestLifecycleDefaults(t *testing.T) {
	finish := Shutdown{Shutdown: faultyserver.Shutdown{Mode: faultyserver.ShutdownFinish}, TerminationGrace: 30 * time.Second}
	tests := []struct {
		name      string
		extra     string
		readiness *Readiness
		shutdown  Shutdown
		kube      Kube
	}{
		{
			name:     "none given",
			shutdown: finish,
			kube:     Kube{Workload: WorkloadPods},
		},
		{
			name:      "empty objects",
			extra:     "  readiness: {}\n  shutdown: {}\n  kube: {}\n",
			readiness: &Readiness{Path: faultyserver.HealthPath, Period: 10 * time.Second, Timeout: time.Second, FailureThreshold: 3, SuccessThreshold: 1},
			shutdown:  finish,
			kube:      Kube{Workload: WorkloadPods},
		},
		{
			name:      "the example of the docs",
			extra:     "  readiness: {path: /healthz, period: 10s, timeout: 1s, failure_threshold: 3, success_threshold: 1}\n  shutdown: {mode: drain, delay: 5s, pre_stop_sleep: 5s, termination_grace: 30s}\n  kube: {workload: deployment, service: true, rollout: {at: 10s, max_surge: 1, max_unavailable: 0}}\n",
			readiness: &Readiness{Path: "/healthz", Period: 10 * time.Second, Timeout: time.Second, FailureThreshold: 3, SuccessThreshold: 1},
			shutdown:  Shutdown{Shutdown: faultyserver.Shutdown{Mode: faultyserver.ShutdownDrain, Delay: 5 * time.Second}, PreStopSleep: 5 * time.Second, TerminationGrace: 30 * time.Second},
			kube:      Kube{Workload: WorkloadDeployment, Service: true, Rollout: &Rollout{At: 10 * time.Second, MaxSurge: "1", MaxUnavailable: "0"}},
		},
		{
			name:      "some given",
			extra:     "  readiness: {period: 2s, success_threshold: 2}\n  shutdown: {mode: abrupt}\n  kube: {workload: deployment, rollout: {at: 5s}}\n",
			readiness: &Readiness{Path: faultyserver.HealthPath, Period: 2 * time.Second, Timeout: time.Second, FailureThreshold: 3, SuccessThreshold: 2},
			shutdown:  Shutdown{Shutdown: faultyserver.Shutdown{Mode: faultyserver.ShutdownAbrupt}, TerminationGrace: 30 * time.Second},
			kube:      Kube{Workload: WorkloadDeployment, Rollout: &Rollout{At: 5 * time.Second, MaxSurge: "25%", MaxUnavailable: "25%"}},
		},
		{
			name:     "percentages",
			extra:    "  kube: {workload: deployment, rollout: {at: 0s, max_surge: 100%, max_unavailable: '0%'}}\n",
			shutdown: finish,
			kube:     Kube{Workload: WorkloadDeployment, Rollout: &Rollout{MaxSurge: "100%", MaxUnavailable: "0%"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse("t.yaml", []byte(lifecycleFile(tt.extra)))
			if err != nil {
				t.Fatal(err)
			}
			in := e.Instances
			if diff := cmp.Diff(tt.readiness, in.Readiness); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.shutdown, in.Shutdown); diff != "" {
				t.Errorf("shutdown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kube, in.Kube); diff != "" {
				t.Errorf("kube (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadinessPathFromHealth: the probe's path defaults to
// instances.health when the file gives one.
func TestReadinessPathFromHealth(t *testing.T) {
	src := "name: t\nduration: 30s\nrate: 10\nstrategies: [round-robin]\ninstances:\n  external: [http://10.0.0.1:80]\n  health: /ready\n  readiness: {}\n"
	e, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Instances.Readiness.Path; got != "/ready" {
		t.Errorf("readiness path %q, want instances.health's /ready", got)
	}
}

func TestLifecycleErrors(t *testing.T) {
	tests := []struct {
		name, extra, want string
	}{
		// readiness
		{"relative path", "  readiness: {path: healthz}\n", `instances.readiness.path: must be a path starting with /, got "healthz"`},
		{"control path", "  readiness: {path: /_chaos/stats}\n", `instances.readiness.path: "/_chaos/stats" is under the control API (/_chaos/), which answers only requests that carry the run's token`},
		{"control prefix itself", "  readiness: {path: /_chaos}\n", `instances.readiness.path: "/_chaos" is under the control API`},
		{"a path the fake server does not serve", "  readiness: {path: /ready}\n", `instances.readiness.path: the fake server answers its health check at /healthz only, and serves any other path as a request: a probe of "/ready" would count as load`},
		{"period in milliseconds", "  readiness: {period: 1500ms}\n", "instances.readiness.period: must be a whole number of seconds, at least 1s (Kubernetes takes it in seconds), got 1.5s"},
		{"period zero", "  readiness: {period: 0s}\n", "instances.readiness.period: must be a whole number of seconds, at least 1s"},
		{"timeout under a second", "  readiness: {timeout: 500ms}\n", "instances.readiness.timeout: must be a whole number of seconds, at least 1s"},
		{"period not a duration", "  readiness: {period: often}\n", `instances.readiness.period: want a duration like "30s" or "10ms", got "often"`},
		{"failure threshold 0", "  readiness: {failure_threshold: 0}\n", "instances.readiness.failure_threshold: must be >= 1"},
		{"success threshold 0", "  readiness: {success_threshold: 0}\n", "instances.readiness.success_threshold: must be >= 1"},
		{"unknown readiness key", "  readiness: {initial_delay: 5s}\n", `unknown field "initial_delay"`},
		{"readiness not a mapping", "  readiness: yes\n", "instances.readiness: want a mapping of keys: path, period, timeout, failure_threshold, success_threshold"},
		{"threshold a fraction", "  readiness: {failure_threshold: 2.5}\n", "instances.readiness.failure_threshold: 2.5 is not a whole number"},

		// shutdown
		{"unknown mode", "  shutdown: {mode: graceful}\n", `instances.shutdown.mode: unknown shutdown mode "graceful" (want one of finish, abrupt, drain)`},
		{"delay without drain", "  shutdown: {delay: 5s}\n", "instances.shutdown.delay: applies to the drain mode only (finish has no delay), got 5s"},
		{"delay with abrupt", "  shutdown: {mode: abrupt, delay: 5s}\n", "instances.shutdown.delay: applies to the drain mode only (abrupt has no delay)"},
		{"negative delay", "  shutdown: {mode: drain, delay: -1s}\n", "instances.shutdown.delay: must be >= 0, got -1s"},
		{"delay too long", "  shutdown: {mode: drain, delay: 11m, termination_grace: 1h}\n", "instances.shutdown.delay: must be at most 10m0s, got 11m0s"},
		{"pre-stop sleep in ms", "  shutdown: {pre_stop_sleep: 500ms}\n", "instances.shutdown.pre_stop_sleep: must be a whole number of seconds >= 0 (Kubernetes takes a preStop sleep in seconds), got 500ms"},
		{"grace zero", "  shutdown: {termination_grace: 0s}\n", "instances.shutdown.termination_grace: must be a whole number of seconds, at least 1s"},
		{"grace in ms", "  shutdown: {termination_grace: 2500ms}\n", "instances.shutdown.termination_grace: must be a whole number of seconds, at least 1s (Kubernetes takes a pod's grace period in seconds), got 2.5s"},
		{"delay past the grace", "  shutdown: {mode: drain, delay: 40s}\n", "instances.shutdown.termination_grace: 30s is not longer than delay 40s + pre_stop_sleep 0s: a shutdown delay longer than the grace period"},
		{"delay and sleep equal to the grace", "  shutdown: {mode: drain, delay: 5s, pre_stop_sleep: 5s, termination_grace: 10s}\n", "instances.shutdown.termination_grace: 10s is not longer than delay 5s + pre_stop_sleep 5s"},
		{"unknown shutdown key", "  shutdown: {grace: 5s}\n", `unknown field "grace"`},

		// kube
		{"unknown workload", "  kube: {workload: statefulset}\n", `instances.kube.workload: want pods or deployment, got "statefulset"`},
		{"rollout of pods", "  kube: {rollout: {at: 10s}}\n", "instances.kube.rollout: needs workload: deployment (a rolling restart replaces a Deployment's pods; workload pods has none)"},
		{"rollout after the run", "  kube: {workload: deployment, rollout: {at: 30s}}\n", "instances.kube.rollout.at: 30s is not before the end of the run (duration 30s)"},
		{"rollout before the run", "  kube: {workload: deployment, rollout: {at: -1s}}\n", "instances.kube.rollout.at: must be >= 0, got -1s"},
		{"surge negative", "  kube: {workload: deployment, rollout: {at: 1s, max_surge: -1}}\n", `instances.kube.rollout.max_surge: want a whole number >= 0 or a percentage such as 25%, got "-1"`},
		{"surge a word", "  kube: {workload: deployment, rollout: {at: 1s, max_surge: lots}}\n", `instances.kube.rollout.max_surge: want a whole number >= 0 or a percentage such as 25%, got "lots"`},
		{"surge a fraction", "  kube: {workload: deployment, rollout: {at: 1s, max_surge: 1.5}}\n", `instances.kube.rollout.max_surge: want a whole number >= 0 or a percentage such as 25%, got "1.5"`},
		{"surge a mapping", "  kube: {workload: deployment, rollout: {at: 1s, max_surge: {n: 1}}}\n", "instances.kube.rollout.max_surge: want a whole number >= 0 or a percentage such as 25%, got a mapping"},
		{"unavailable over 100%", "  kube: {workload: deployment, rollout: {at: 1s, max_unavailable: 150%}}\n", `instances.kube.rollout.max_unavailable: a percentage must be within 0% and 100%, got "150%"`},
		{"both zero", "  kube: {workload: deployment, rollout: {at: 1s, max_surge: 0, max_unavailable: 0%}}\n", "instances.kube.rollout: max_surge and max_unavailable are both 0, which Kubernetes refuses"},
		{"service not a bool", "  kube: {service: maybe}\n", `instances.kube.service: want true or false, got "maybe"`},
		{"unknown kube key", "  kube: {namespace: x}\n", `unknown field "namespace"`},
		{"unknown rollout key", "  kube: {workload: deployment, rollout: {at: 1s, partition: 2}}\n", `unknown field "partition"`},
		{"deployment of groups", "  groups: [{count: 2, service: {dist: fixed, value: 1ms}}, {count: 2, service: {dist: fixed, value: 5ms}}]\n  kube: {workload: deployment}\n",
			"instances.groups: a Deployment's pods share one template"},
		{"deployment of an app", "  app: {image: example:1, port: 9000}\n  kube: {workload: deployment}\n", "instances.app: runs as pods (workload: pods)"},
		{"deployment with a kill", "  kube: {workload: deployment}\nfaults: [{instance: 0, at: 1s, fault: {mode: kill}}]\n",
			"faults[0].fault.mode: kill acts on a container, and a Deployment's pods are its own"},
		{"fault past the rollout", "  kube: {workload: deployment, rollout: {at: 10s}}\nfaults: [{instance: 0, at: 1s, fault: {mode: fail}}]\n",
			"faults[0].until: must end by instances.kube.rollout.at (10s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(lifecycleFile(tt.extra)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestLifecycleValidate: Validate checks the fields of an experiment built
// in code too, and every error of them at once.
func TestLifecycleValidate(t *testing.T) {
	e, err := Parse("t.yaml", []byte(lifecycleFile("")))
	if err != nil {
		t.Fatal(err)
	}
	e.Instances.Readiness = &Readiness{Path: "/healthz", Period: time.Second, Timeout: time.Second, FailureThreshold: 0, SuccessThreshold: 1}
	e.Instances.Shutdown.Mode = "slow"
	e.Instances.Kube = Kube{Workload: WorkloadDeployment, Rollout: &Rollout{At: time.Second, MaxSurge: "1", MaxUnavailable: "x"}}
	err = e.Validate()
	for _, want := range []string{"instances.readiness.failure_threshold:", "instances.shutdown.mode:", "instances.kube.rollout.max_unavailable:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want an error naming %s", err, want)
		}
	}
}

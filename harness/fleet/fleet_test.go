package fleet

import (
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
)

func TestSpecEqual(t *testing.T) {
	base := func() Spec {
		e, err := experiments.Parse("x.yaml", []byte(`name: x
duration: 1s
rate: 10
instances:
  workers: 2
  service: {dist: fixed, value: 1ms}
  groups: [{count: 2}, {count: 1, workers: 5}]
strategies: [p2c]
`))
		if err != nil {
			t.Fatal(err)
		}
		return Spec{Instances: e.Instances, Seed: 1}
	}
	tests := []struct {
		name  string
		edit  func(*Spec)
		equal bool
	}{
		{"same", func(*Spec) {}, true},
		{"seed", func(s *Spec) { s.Seed = 2 }, false},
		{"queue limit", func(s *Spec) { s.QueueLimit = 3 }, false},
		{"keep abandoned", func(s *Spec) { s.KeepAbandoned = true }, false},
		{"one instance's workers", func(s *Spec) {
			s.Each = append([]experiments.Instance(nil), s.Each...)
			s.Each[2].Workers = 6
		}, false},
		{"a readiness probe", func(s *Spec) { s.Readiness = &experiments.Readiness{Path: "/healthz", Period: time.Second} }, false},
		{"shutdown mode", func(s *Spec) { s.Shutdown.Mode = faultyserver.ShutdownAbrupt }, false},
		{"shutdown delay", func(s *Spec) { s.Shutdown.Mode, s.Shutdown.Delay = faultyserver.ShutdownDrain, time.Second }, false},
		{"pre-stop sleep", func(s *Spec) { s.Shutdown.PreStopSleep = time.Second }, false},
		{"termination grace", func(s *Spec) { s.Shutdown.TerminationGrace = time.Minute }, false},
		{"workload", func(s *Spec) { s.Kube.Workload = experiments.WorkloadDeployment }, false},
		{"service", func(s *Spec) { s.Kube.Service = true }, false},
		{"rollout", func(s *Spec) { s.Kube.Rollout = &experiments.Rollout{MaxSurge: "1", MaxUnavailable: "0"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base(), base()
			tt.edit(&b)
			if got := a.Equal(b); got != tt.equal {
				t.Errorf("Equal = %v, want %v", got, tt.equal)
			}
		})
	}
}

// TestServerConfig: each instance gets its own group's settings and a seed
// of its own, derived as the simulator derives it.
func TestServerConfig(t *testing.T) {
	e, err := experiments.Parse("x.yaml", []byte(`name: x
duration: 1s
rate: 10
instances:
  workers: 2
  queue_limit: 9
  service: {dist: fixed, value: 1ms}
  groups: [{count: 1}, {count: 1, workers: 5, service: {dist: fixed, value: 3ms}}]
strategies: [p2c]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Instances: e.Instances, Seed: 11}
	c0, c1 := s.ServerConfig(0), s.ServerConfig(1)
	if c0.ID != 0 || c0.Workers != 2 || c0.QueueLimit != 9 || c1.ID != 1 || c1.Workers != 5 || c1.Service.String() == c0.Service.String() {
		t.Errorf("configs %+v / %+v", c0, c1)
	}
	if c0.Seed != InstanceSeed(11, 0) || c1.Seed != InstanceSeed(11, 1) || c0.Seed == c1.Seed {
		t.Errorf("seeds %d, %d", c0.Seed, c1.Seed)
	}
}

// TestSpecEqualProbeAndRollout: probes and rollouts compare by value.
func TestSpecEqualProbeAndRollout(t *testing.T) {
	spec := func() Spec {
		var s Spec
		s.Readiness = &experiments.Readiness{Path: "/healthz", Period: 2 * time.Second}
		s.Kube.Rollout = &experiments.Rollout{At: time.Second, MaxSurge: "1"}
		return s
	}
	a, b := spec(), spec()
	if !a.Equal(b) {
		t.Error("equal probes and rollouts in two values: not Equal")
	}
	b.Kube.Rollout.MaxSurge = "2"
	if a.Equal(b) {
		t.Error("rollouts of different surges: Equal")
	}
}

// TestServerConfigShutdown: the instances' shutdown reaches the server's
// configuration.
func TestServerConfigShutdown(t *testing.T) {
	e, err := experiments.Parse("x.yaml", []byte(`name: x
duration: 1s
rate: 10
instances:
  count: 2
  service: {dist: fixed, value: 1ms}
  shutdown: {mode: drain, delay: 3s, pre_stop_sleep: 2s}
strategies: [p2c]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Instances: e.Instances}
	want := faultyserver.Shutdown{Mode: faultyserver.ShutdownDrain, Delay: 3 * time.Second}
	if got := s.ServerConfig(1).Shutdown; got != want {
		t.Errorf("shutdown %+v, want %+v", got, want)
	}
}

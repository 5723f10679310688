package fleet

import (
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
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

package engine

import (
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

func TestRequestPicker(t *testing.T) {
	const draws = 200000
	list := &experiments.Requests{List: []experiments.Request{{Weight: 3}, {Weight: 1}, {Weight: 0.5}, {Weight: 5.5}}}
	tests := []struct {
		name  string
		reqs  *experiments.Requests
		share []float64
		exact bool // round-robin: every request exactly its share
	}{
		{"a list by weight", list, []float64{0.3, 0.1, 0.05, 0.55}, false},
		{"a targets file in turn", &experiments.Requests{Targets: "t.txt", List: make([]experiments.Request, 3)},
			[]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, true},
		{"one request", &experiments.Requests{List: []experiments.Request{{Weight: 2}}}, []float64{1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewRequestPicker(tt.reqs, 7)
			counts := make([]int, len(tt.share))
			for k := range uint64(draws) {
				i := p.Pick(k)
				if tt.exact && i != int(k%uint64(len(tt.share))) {
					t.Fatalf("request %d is %d, want %d (in turn)", k, i, k%uint64(len(tt.share)))
				}
				counts[i]++
			}
			for i, want := range tt.share {
				got := float64(counts[i]) / draws
				if math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/draws)+1e-9 {
					t.Errorf("request %d share %.4f, want %.4f", i, got, want)
				}
			}
		})
	}
}

func TestRequestPickerRepeats(t *testing.T) {
	a, b, c := NewRequestPicker(&experiments.Requests{List: []experiments.Request{{Weight: 1}, {Weight: 1}, {Weight: 2}}}, 1),
		NewRequestPicker(&experiments.Requests{List: []experiments.Request{{Weight: 1}, {Weight: 1}, {Weight: 2}}}, 1),
		NewRequestPicker(&experiments.Requests{List: []experiments.Request{{Weight: 1}, {Weight: 1}, {Weight: 2}}}, 2)
	differ := 0
	for k := range uint64(1000) {
		if a.Pick(k) != b.Pick(k) {
			t.Fatalf("request %d: %d and %d from the same seed", k, a.Pick(k), b.Pick(k))
		}
		if a.Pick(k) != c.Pick(k) {
			differ++
		}
	}
	if differ < 300 {
		t.Errorf("seeds 1 and 2 differ in %d of 1000 choices; want them independent", differ)
	}
	if NewRequestPicker(nil, 1) != nil {
		t.Error("no requests: want a nil picker")
	}
}

func TestExperimentKeysFromRequests(t *testing.T) {
	exp := &experiments.Experiment{Seed: 3, Requests: &experiments.Requests{
		Key: &experiments.RequestKey{Header: "X-User"},
		List: []experiments.Request{
			{Weight: 1, Key: 10, HasKey: true},
			{Weight: 1}, // carries no key
		},
	}}
	keys, pick := ExperimentKeys(exp), NewRequestPicker(exp.Requests, exp.Seed)
	for k := range uint64(1000) {
		key, ok := keys.Draw(k, time.Second)
		want := exp.Requests.List[pick.Pick(k)]
		if key != want.Key || ok != want.HasKey {
			t.Fatalf("request %d: key %d %v, want %d %v", k, key, ok, want.Key, want.HasKey)
		}
	}
	exp.Requests.Key = nil
	if ExperimentKeys(exp) != nil {
		t.Error("requests without a key and no keys: want no key source")
	}
}

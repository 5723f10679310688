package experiments

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A file that gives only a count loads; its instances have no service
// time, so only external ones run it (see harness: fleet.Check, the
// simulator's Check), and --backend makes them external.
func TestCountOnlyInstances(t *testing.T) {
	e, err := Parse("t.yaml", []byte("name: t\nduration: 2s\nrate: 10\nstrategies: [round-robin]\ninstances: {count: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Instances.Modeled() || e.Instances.Foreign() {
		t.Errorf("modeled %v, foreign %v; want neither", e.Instances.Modeled(), e.Instances.Foreign())
	}
	got, err := e.Apply(Overrides{External: []External{{URL: "http://a:1"}, {URL: "http://b:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Instances.Foreign() || got.Instances.Count != 2 || got.Instances.Modeled() {
		t.Errorf("after --backend: foreign %v, count %d, modeled %v; want true, 2, false", got.Instances.Foreign(), got.Instances.Count, got.Instances.Modeled())
	}
	// A bad service time is still refused when given.
	if _, err := Parse("t.yaml", []byte("name: t\nduration: 2s\nrate: 10\nstrategies: [round-robin]\ninstances: {count: 2, service: {dist: fixed, value: -1ms}}\n")); err == nil || !strings.Contains(err.Error(), "instances.service") {
		t.Errorf("a service without its value: %v; want an error naming instances.service", err)
	}
}

// --backend given N times makes N instances: faults on the ones beyond
// are not applied, each with a warning; instance settings are cut or
// filled with the file's defaults.
func TestBackendsSetTheCount(t *testing.T) {
	const file = `
name: t
duration: 10s
rate: 100
instances:
  groups:
    - {count: 2, service: {dist: fixed, value: 10ms}}
    - {count: 2, service: {dist: fixed, value: 50ms}, weight: 3}
faults:
  - {instance: 0, at: 1s, fault: {mode: fail, status: 503}}
  - {instances: [1, 3], at: 2s, fault: {mode: slow, factor: 5}}
strategies: [round-robin]
`
	e, err := Parse("t.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	urls := func(n int) []External {
		out := make([]External, n)
		for i := range out {
			out[i] = External{URL: fmt.Sprintf("http://h%d:1", i)}
		}
		return out
	}
	tests := []struct {
		name     string
		n        int
		faults   []int // the instances of the faults kept
		weights  []float64
		warnings []string
	}{
		{name: "as many", n: 4, faults: []int{0, 1, 3}, weights: []float64{1, 1, 3, 3}},
		{name: "fewer", n: 2, faults: []int{0, 1},
			warnings: []string{"--backend: faults[1] (slow on instance 3) is not applied: the run has 2 instances, one per --backend (ids 0..1)"}},
		{name: "one", n: 1, faults: []int{0},
			warnings: []string{"faults[1] (slow on instance 1) is not applied", "faults[1] (slow on instance 3) is not applied"}},
		{name: "more", n: 6, faults: []int{0, 1, 3}, weights: []float64{1, 1, 3, 3, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Apply(Overrides{External: urls(tt.n)})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int
			for _, f := range got.Faults {
				ids = append(ids, f.Instance)
			}
			if got.Instances.Count != tt.n || len(got.Instances.External) != tt.n || !slices.Equal(ids, tt.faults) {
				t.Errorf("count %d, %d external, faults on %v; want %d, %d, %v", got.Instances.Count, len(got.Instances.External), ids, tt.n, tt.n, tt.faults)
			}
			if w := got.Instances.Weights(); !slices.Equal(w, tt.weights) {
				t.Errorf("weights %v, want %v", w, tt.weights)
			}
			all := strings.Join(got.Warnings, "\n")
			for _, w := range tt.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", got.Warnings, w)
				}
			}
			if len(tt.warnings) == 0 && len(got.Warnings) > 0 {
				t.Errorf("warnings %q, want none", got.Warnings)
			}
			if e.Instances.Count != 4 || len(e.Faults) != 3 || len(e.Instances.Each) != 4 {
				t.Error("Apply changed the loaded experiment")
			}
		})
	}
	// Every fault gone: a warning says the run has none.
	one, err := Parse("t.yaml", []byte(strings.Replace(file, "instance: 0, at: 1s", "instance: 2, at: 1s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := one.Apply(Overrides{External: urls(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Faults) != 0 || !slices.Contains(got.Warnings, "--backend: no fault of the experiment is applied; the run measures the instances without one") {
		t.Errorf("faults %v, warnings %q", got.Faults, got.Warnings)
	}
}

// A distributed run's generators take the count from their targets: the
// same instances as the coordinator's, without their URLs.
func TestInstancesOverride(t *testing.T) {
	e, err := Parse("t.yaml", []byte(good)) // 3 instances
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Apply(Overrides{Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got.Instances.Count != 2 || got.Instances.Foreign() || !got.Instances.Modeled() {
		t.Errorf("count %d, foreign %v, modeled %v; want 2, false, true", got.Instances.Count, got.Instances.Foreign(), got.Instances.Modeled())
	}
	if _, err := e.Apply(Overrides{Instances: 1001}); err == nil || !strings.Contains(err.Error(), "instance count 1001 (one per --backend or --target): a run has 1 to 1000 instances") {
		t.Errorf("1001 instances: %v", err)
	}
}

// TestBackendsDropAJoiningInstance: fewer --backend URLs than cold-start's
// instances leave out the one that joins mid-run, and the run says so.
func TestBackendsDropAJoiningInstance(t *testing.T) {
	e, err := Load("cold-start")
	if err != nil {
		t.Fatal(err)
	}
	joining := e.Instances.Joining()
	if len(joining) == 0 {
		t.Skip("cold-start has no joining instance")
	}
	n := joining[0]
	c, err := e.Apply(Overrides{Instances: n})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("--backend: instance %d, which joins at %v, is not in the run", n, e.Instances.Each[n].JoinAt)
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q\nwant one starting %q", c.Warnings, want)
	}
}

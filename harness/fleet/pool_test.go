package fleet_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

type testFleet struct {
	spec       int
	resetFails bool
	terminated bool
}

func (f *testFleet) Spec() fleet.Spec { return fleet.Spec{Seed: uint64(f.spec)} }

func (f *testFleet) Reuse(context.Context) (*testFleet, error) {
	if f.resetFails {
		return nil, errors.New("reset failed")
	}
	return &testFleet{spec: f.spec}, nil
}

func (f *testFleet) Terminate() { f.terminated = true }

// TestPool: a released fleet is reused for the same spec and terminated
// for another; a failed reuse starts a new one; Close hands back every
// fleet and refuses further starts, terminating one that started meanwhile.
func TestPool(t *testing.T) {
	var p fleet.Pool[*testFleet]
	p.Reuse = true
	var seqs []int
	p.Name = "test backends"
	start := func(spec int) (*testFleet, bool, error) {
		return p.Start(context.Background(), fleet.Spec{Seed: uint64(spec)}, func(seq int) (*testFleet, error) {
			seqs = append(seqs, seq)
			return &testFleet{spec: spec}, nil
		})
	}
	a, reused, err := start(1)
	if err != nil || reused {
		t.Fatalf("first start: reused %v, %v", reused, err)
	}
	p.Release(a)
	b, reused, err := start(1)
	if err != nil || !reused || a.terminated {
		t.Fatalf("same spec: reused %v, kept terminated %v, %v", reused, a.terminated, err)
	}
	p.Release(b)
	c, reused, err := start(2)
	if err != nil || reused || !b.terminated {
		t.Fatalf("another spec: reused %v, kept terminated %v, %v", reused, b.terminated, err)
	}
	p.Release(c)
	p.Release(&testFleet{spec: 3, resetFails: true}) // replaces c, which is terminated
	if !c.terminated {
		t.Error("a fleet kept for reuse and replaced was not terminated")
	}
	d, reused, err := start(3) // same spec, reset fails: a new one
	if err != nil || reused {
		t.Fatalf("failed reuse: reused %v, %v", reused, err)
	}
	if want := []int{1, 3, 4}; len(seqs) != 3 || seqs[0] != want[0] || seqs[1] != want[1] || seqs[2] != want[2] {
		t.Errorf("new fleets got sequence numbers %v, want %v", seqs, want)
	}
	fleets, ok := p.Close()
	if !ok || len(fleets) != 1 || fleets[0] != d {
		t.Errorf("Close: %v, %v; want the one fleet handed out", fleets, ok)
	}
	if _, ok := p.Close(); ok {
		t.Error("second Close: ok")
	}
	if _, _, err := start(1); !errors.Is(err, fleet.ErrProviderClosed) || err.Error() != "test backends: provider closed" {
		t.Errorf("start after Close: %v", err)
	}
	p.Release(d) // after Close: terminated, not kept
	if !d.terminated {
		t.Error("a fleet released after Close was not terminated")
	}
}

// TestFreeLoopbackPorts: a fleet's ports are distinct (one after the
// other, the kernel may hand out one twice).
func TestFreeLoopbackPorts(t *testing.T) {
	ports, err := fleet.FreeLoopbackPorts(300)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("port %d repeated or invalid in %v", p, ports)
		}
		seen[p] = true
	}
}

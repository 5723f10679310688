package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
)

// The shipped retry-amplification, simulated: the last tier receives the
// product of every hop's attempts, read from summary.json's tiers.
func TestTierAmplification(t *testing.T) {
	full, err := experiments.Load("retry-amplification")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := full.Apply(experiments.Overrides{Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		a, b, c float64 // requests received per client request
		tol     float64
	}{
		{"round-robin", 1, 1, 1, 0},
		{"round-robin+retry(attempts=3)", 3, 9, 27, 0},
		{"round-robin+retry(attempts=3) > round-robin > round-robin", 3, 3, 3, 0},
		{"round-robin+retry(attempts=3,budget=10%,min_per_s=0)", 1.1, 1.2, 1.33, 0.05},
	} {
		st := runtest.StrategyByName(t, sum, c.name)
		runtest.CheckAccounting(t, st)
		if len(st.Tiers) != 3 {
			t.Fatalf("%s: %d tiers", c.name, len(st.Tiers))
		}
		for i, want := range []float64{c.a, c.b, c.c} {
			tier := st.Tiers[i]
			if got := tier.PerClientRequest; math.Abs(got-want) > c.tol*want+1e-9 {
				t.Errorf("%s: tier %s receives %v per client request, want %v", c.name, tier.Name, got, want)
			}
			if tier.ErrorRatio != 1 {
				t.Errorf("%s: tier %s error ratio %v, want 1 (tier c fails every call)", c.name, tier.Name, tier.ErrorRatio)
			}
		}
		if got, _ := reports.Value(&st, "tier_amplification"); got != st.Tiers[2].PerClientRequest {
			t.Errorf("%s: tier_amplification %v", c.name, got)
		}
	}
}

// A tier whose downstream hangs: the client's per-try timeout gives up
// each attempt, which cancels its call and that call's attempt at the
// last tier, so that every request and call ends (the simulation ends)
// and the cancelled attempts are counted where they went.
func TestTierCallCancelled(t *testing.T) {
	exp, err := experiments.Parse("t.yaml", []byte(`rate: 100
duration: 2s
timeout: 1s
instances: {service: {dist: fixed, value: 1ms}}
tiers:
  - {name: a, instances: 2, downstream: b}
  - {name: b, instances: 2}
faults: [{tier: b, at: 0s, fault: {mode: hang}}]
strategies: ["round-robin+retry(attempts=2,per_try_timeout=100ms,on=timeout) > round-robin"]
`))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]
	if st.Requests == 0 || st.ErrorRatio != 1 || st.AttemptsPerRequest.Mean != 2 {
		t.Fatalf("requests %d, error ratio %v, attempts %+v", st.Requests, st.ErrorRatio, st.AttemptsPerRequest)
	}
	b := st.Tiers[1]
	if b.PerClientRequest != 2 {
		t.Errorf("tier b received %v calls per client request, want 2 (one per attempt at a)", b.PerClientRequest)
	}
	var cancelled int64
	for _, id := range b.Instances {
		cancelled += st.Instances[id].Cancelled
	}
	if cancelled != b.RequestsReceived {
		t.Errorf("tier b: %d of %d calls cancelled, want all", cancelled, b.RequestsReceived)
	}
}

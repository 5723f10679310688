package live

import (
	"context"
	"math"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// TestRunH2C: with protocol h2c every request of a built-in strategy and
// of a pinned one succeeds over HTTP/2 to the in-process instances, and
// the pinned strategy's 2 replicas × 2 connections each carry a quarter
// of the load, so every instance's share is a multiple of a quarter.
func TestRunH2C(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "h2c-mini", `
seed: 2
duration: 2s
arrival: constant
rate: 300
protocol: h2c
connections: 2
replicas: 2
instances: {count: 5, workers: 4, service: {dist: fixed, value: 2ms}}
strategies: [round-robin, random+pinned]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Strategies) != 2 {
		t.Fatalf("%d strategies, want 2", len(sum.Strategies))
	}
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		if st.Requests < 550 || st.ErrorRatio != 0 || st.Unattributed != 0 {
			t.Errorf("%s: %d requests, error ratio %v, %d unattributed; want about 600, no errors, all attributed",
				st.Name, st.Requests, st.ErrorRatio, st.Unattributed)
		}
	}
	rr, pinned := sum.Strategies[0], sum.Strategies[1]
	for _, in := range rr.Instances {
		if math.Abs(in.Share-0.2) > 0.01 {
			t.Errorf("round-robin: instance %d share %v, want 0.2", in.ID, in.Share)
		}
	}
	for _, in := range pinned.Instances {
		q := in.Share * 4
		if math.Abs(q-math.Round(q)) > 0.02 {
			t.Errorf("random+pinned: instance %d share %v, want a multiple of 1/4 (4 connections)", in.ID, in.Share)
		}
	}
}

package live

import (
	"context"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// Three tiers of real instances, the last failing every call: each tier's
// instances call the next through their own balancer and retries, in the
// instances' handlers, and each attempt is counted at the instance it
// went to. With three attempts at every hop the last tier receives 27
// calls per client request, exactly: every attempt fails, so none is
// spared.
func TestTiersAmplifyRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	exp := runtest.MustExperiment(t, "live-tiers", `
seed: 3
duration: 1s
rate: 40
timeout: 5s
instances: {workers: 16, service: {dist: fixed, value: 1ms}}
tiers:
  - {name: a, instances: 2, downstream: b}
  - {name: b, instances: 2, downstream: c}
  - {name: c, instances: 3}
faults:
  - {tier: c, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - round-robin+retry(attempts=3,backoff=1ms,max_backoff=2ms)
  - round-robin+retry(attempts=3,backoff=1ms,max_backoff=2ms) > round-robin > round-robin
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want [3]float64
	}{
		{"round-robin+retry(attempts=3,backoff=1ms,max_backoff=2ms)", [3]float64{3, 9, 27}},
		{"round-robin+retry(attempts=3,backoff=1ms,max_backoff=2ms) > round-robin > round-robin", [3]float64{3, 3, 3}},
	} {
		st := runtest.StrategyByName(t, sum, c.name)
		runtest.CheckAccounting(t, st)
		if st.Requests == 0 || st.ErrorRatio != 1 {
			t.Fatalf("%s: %d requests, error ratio %v; want every one failed", c.name, st.Requests, st.ErrorRatio)
		}
		for i, tier := range st.Tiers {
			if tier.PerClientRequest != c.want[i] || tier.Errors != tier.RequestsReceived {
				t.Errorf("%s: tier %s received %d (%v per client request, want %v), %d errors",
					c.name, tier.Name, tier.RequestsReceived, tier.PerClientRequest, c.want[i], tier.Errors)
			}
		}
		if st.FaultyShare != 0 {
			t.Errorf("%s: faulty share %v: the client calls tier a, which has no fault", c.name, st.FaultyShare)
		}
		if c.want[1] == 9 && (st.Tiers[1].Retry == nil || st.Tiers[1].Retry.Retries != 2*st.Tiers[1].RequestsReceived) {
			t.Errorf("%s: tier b's retries %+v; want two per call it received", c.name, st.Tiers[1].Retry)
		}
	}
}

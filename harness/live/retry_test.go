package live

import (
	"context"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// Real instances, one failing fast with 503, under round robin with and
// without retries. With two attempts to another host every request that
// meets the faulty instance is answered by a healthy one; the attempts are
// counted where they went, so the faulty instance still receives its
// quarter of the attempts while answering none of the requests.
func TestRetriesAreAttemptsAtTheirInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	exp := runtest.MustExperiment(t, "live-retry", `
seed: 5
duration: 2s
rate: 200
timeout: 2s
instances: {count: 4, workers: 8, service: {dist: fixed, value: 2ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - round-robin
  - round-robin+retry(attempts=2,other_host=true)
  - round-robin+hedge(delay=1ms,max=2)
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := runtest.StrategyByName(t, sum, "round-robin")
	retried := runtest.StrategyByName(t, sum, "round-robin+retry(attempts=2,other_host=true)")
	hedged := runtest.StrategyByName(t, sum, "round-robin+hedge(delay=1ms,max=2)")
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
	}
	if plain.ErrorRatio < 0.2 {
		t.Errorf("round-robin: error ratio %.3f; want about a quarter", plain.ErrorRatio)
	}
	if retried.ErrorRatio > 0.001 {
		t.Errorf("round-robin+retry: error ratio %.4f; want none, every retry goes to a healthy host", retried.ErrorRatio)
	}
	bad := retried.Instances[0]
	if bad.Errors != bad.Requests || bad.Requests == 0 {
		t.Errorf("round-robin+retry: faulty instance: %d attempts, %d errors; want every attempt failed", bad.Requests, bad.Errors)
	}
	if m := retried.AttemptsPerRequest; m == nil || m.Mean < 1.15 || m.Mean > 1.4 || m.Max != 2 {
		t.Errorf("round-robin+retry: attempts per request %+v; want a mean near 1.25 and a max of 2", m)
	}
	if r := retried.Retry; r == nil || r.Retries == 0 || r.RetriesRefused != 0 {
		t.Errorf("round-robin+retry: retry counts %+v", r)
	}
	if retried.FaultyShare < 0.15 || retried.FaultyShare > 0.3 {
		t.Errorf("round-robin+retry: faulty share of attempts %.3f; want about 0.2", retried.FaultyShare)
	}
	// A hedge does not outlive a failure: an attempt that fails while the
	// hedge is in flight waits for it, and the hedge answers.
	if hedged.Retry == nil || hedged.Retry.Hedges == 0 {
		t.Errorf("round-robin+hedge: hedge counts %+v; want hedges sent", hedged.Retry)
	}
	t.Logf("plain %.4f errors; retried %.4f errors, %.3f attempts/request, faulty share %.3f; hedged %.4f errors, %+v",
		plain.ErrorRatio, retried.ErrorRatio, retried.AttemptsPerRequest.Mean, retried.FaultyShare, hedged.ErrorRatio, *hedged.Retry)
}

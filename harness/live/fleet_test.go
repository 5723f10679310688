package live

import (
	"context"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// TestRunKeysJoinsReplicasProbes runs real backends with request keys,
// a joining instance, two balancer replicas and active health checks.
func TestRunKeysJoinsReplicasProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "fleet-mini", `
seed: 5
duration: 2s
arrival: constant
rate: 400
replicas: 2
instances:
  workers: 0
  service: {dist: fixed, value: 2ms}
  groups:
    - {count: 3}
    - {join_at: 1s}
keys: {dist: uniform, n: 50}
faults:
  - instance: 0
    at: 0s
    fault: {mode: fail, status: 503, health_status: 503}
strategies:
  - key-hash
  - "server-load+healthcheck(interval=200ms,timeout=100ms,rise=2,fall=2)"
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kh := runtest.StrategyByName(t, sum, "key-hash")
	hc := runtest.StrategyByName(t, sum, exp.Strategies[1])
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		// Instance 3 joins at 1 s: nothing sent in the first second reaches it.
		if n := st.Timeline.Instances[3].Requests[0]; n != 0 {
			t.Errorf("%s: instance 3 got %d requests in the first second, before it joined", st.Name, n)
		}
		if st.Instances[3].Requests == 0 {
			t.Errorf("%s: instance 3 got no requests after joining", st.Name)
		}
	}
	// Every key stays on one instance while the host set stays the same; the
	// join at 1 s remaps most keys, so affinity falls between 0.5 and 1.
	if kh.Affinity == nil || *kh.Affinity < 0.5 || *kh.Affinity >= 1 {
		t.Errorf("key-hash affinity %v, want within [0.5, 1)", kh.Affinity)
	}
	// The failing health check takes instance 0 out after two probes.
	var late int64
	for b, n := range hc.Timeline.Instances[0].Requests {
		if time.Duration(b)*time.Second >= time.Second {
			late += n
		}
	}
	if late != 0 || hc.Ejections == 0 {
		t.Errorf("%s: instance 0 got %d requests after 1 s with %d ejections; its failing health check should hide it", hc.Name, late, hc.Ejections)
	}
}

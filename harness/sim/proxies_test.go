package sim

import (
	"context"
	"slices"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// TestSimLeavesProxiesOut: caddy and the connection-level proxies, like
// nginx and HAProxy, run only with the real engine; the simulation leaves
// them out and says so.
func TestSimLeavesProxiesOut(t *testing.T) {
	exp := runtest.MustExperiment(t, "sim-proxies", `
duration: 1s
rate: 50
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [p2c, caddy:least_conn, "caddy:round_robin(fail_duration=5s,unhealthy_latency=75ms)", haproxy:leastconn+tcp, nginx:least_conn+stream]
`)
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Strategies) != 1 || sum.Strategies[0].Name != "p2c" {
		t.Fatalf("simulated %d strategies, want only p2c", len(sum.Strategies))
	}
	for _, name := range exp.Strategies[1:] {
		note := name + ": a real proxy runs only with the real engine (--engine real); it is left out of the simulation."
		if !slices.Contains(sum.Notes, note) {
			t.Errorf("notes %q lack %q", sum.Notes, note)
		}
	}
}

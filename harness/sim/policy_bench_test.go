package sim

import (
	"context"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// BenchmarkSimPolicy measures the simulator's speed under a client policy
// (sim-req/s, client requests): the fast-fail shape (10 instances, one
// answering 503, 4000 req/s for 60 s) with retries, and the slow-instance
// shape (one instance at 1 s) with hedging.
func BenchmarkSimPolicy(b *testing.B) {
	for _, tc := range []struct{ name, fault, strategy string }{
		{"retry", "{mode: fail, status: 503, delay: 1ms}", "round-robin+retry(attempts=2,other_host=true)"},
		{"hedge", "{mode: slow, latency: 1s}", "round-robin+hedge(delay=20ms)"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			exp := runtest.MustExperiment(b, "policy-load", `
duration: 60s
rate: 4000
timeout: 2s
instances: {count: 10, workers: 8, service: {dist: fixed, value: 10ms}}
faults: [{instance: 0, at: 0s, fault: `+tc.fault+`}]
strategies: ["`+tc.strategy+`"]
`)
			var reqs int64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m, err := simStrategy(context.Background(), exp, tc.strategy, simHooks{})
				if err != nil {
					b.Fatal(err)
				}
				reqs += m.Strategy.Requests
			}
			b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "sim-req/s")
		})
	}
}

package strategies

import (
	"testing"
	"time"
)

// BenchmarkPolicyPickDone measures one request of one attempt as the
// engine's client makes it under a policy (Policy.Start, PickOnce,
// Policy.Observe, End), against plain round robin (PickOnce and End) on
// 10 endpoints with the wall clock: the cost a retry or hedge wrapper adds
// to every request, retried or not.
func BenchmarkPolicyPickDone(b *testing.B) {
	for _, spec := range []string{
		"round-robin",
		"round-robin+retry",
		"round-robin+retry(budget=20%)",
		"round-robin+hedge(delay=p95)",
	} {
		b.Run(spec, func(b *testing.B) {
			lb, err := New(spec, Env{N: 10, Rand: newRand(1)})
			if err != nil {
				b.Fatal(err)
			}
			pol := lb.Policy()
			var ms time.Duration
			b.ReportAllocs()
			for b.Loop() {
				if pol != nil {
					pol.Start()
				}
				ep, _, done := lb.PickOnce(Request{})
				// Latencies cycle over 1..100 ms, so that a hedge's
				// percentile has a spread to sort.
				ms = ms%100 + 1
				o := Outcome{Status: 200, Latency: ms * time.Millisecond}
				if pol != nil {
					pol.Observe(o)
				}
				lb.End(ep, done, o)
			}
		})
	}
}

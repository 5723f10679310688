package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/strategies"
)

// BenchmarkProxyOverhead puts the same in-process backends behind lbchaos
// proxy, nginx and HAProxy (all round robin), in one run:
//
//   - the latency each adds at 4000 req/s on the baseline experiment (10
//     instances, 8 workers, fixed 10 ms, Poisson), as the difference of its
//     p50 and p99 from the same load balanced in the client ("direct");
//   - the highest rate, of 2000, 4000, 6000, ... req/s for 5 s each, at
//     which it still answers 99% of requests with 2xx within the 1 s
//     timeout and the generator keeps up, against instances with no
//     concurrency limit and a fixed 1 ms service time, so that the proxy
//     (and the machine) is the limit rather than the backends.
//
// Run it with -benchtime 1x (make bench-proxy); LBCHAOS_BIN names the
// lbchaos binary (else it is built), LBCHAOS_BENCH_DURATION the attack
// length of the latency part (default 10s).
func BenchmarkProxyOverhead(b *testing.B) {
	needProxy(b, strategies.ProxyNginx)
	needProxy(b, strategies.ProxyHAProxy)
	bin := buildLbchaos(b)
	base, d := benchBaseline(b)
	opts := Options{LbchaosBinary: bin}
	direct, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	sum, err := Run(context.Background(), direct, opts)
	if err != nil {
		b.Fatal(err)
	}
	ref := sum.Strategies[0].LatencyMs
	b.Logf("direct (balanced in the client): p50 %.2f ms, p99 %.2f ms", ref.P50, ref.P99)

	rateExp := mustExperiment(b, "proxy-rate", `
duration: 5s
rate: 1000
timeout: 1s
instances: {count: 10, workers: 0, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`)
	for _, name := range []string{"lbchaos:round-robin", "nginx:round_robin", "haproxy:roundrobin"} {
		b.Run(strings.SplitN(name, ":", 2)[0], func(b *testing.B) {
			var p50, p99, best float64
			for range b.N {
				e, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{name}})
				if err != nil {
					b.Fatal(err)
				}
				sum, err := Run(context.Background(), e, opts)
				if err != nil {
					b.Fatal(err)
				}
				st := sum.Strategies[0]
				p50, p99 = st.LatencyMs.P50-ref.P50, st.LatencyMs.P99-ref.P99
				best = 0
				for rate := 2000.0; rate <= 40000; rate += 2000 {
					e, err := rateExp.Apply(experiments.Overrides{Rate: rate, Strategies: []string{name}})
					if err != nil {
						b.Fatal(err)
					}
					sum, err := Run(context.Background(), e, opts)
					if err != nil {
						b.Fatal(err)
					}
					st := sum.Strategies[0]
					b.Logf("%s at %.0f req/s: success %.4f, achieved %.0f req/s, p99 %.1f ms", name, rate, st.SuccessRatio, st.AchievedRate, st.LatencyMs.P99)
					if st.SuccessRatio < 0.99 || st.GeneratorBehind {
						break
					}
					best = rate
				}
			}
			b.ReportMetric(p50, "added-p50-ms")
			b.ReportMetric(p99, "added-p99-ms")
			b.ReportMetric(best, "max-req/s@99%")
		})
	}
}

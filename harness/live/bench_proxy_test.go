package live

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// BenchmarkProxyOverhead puts the same in-process backends behind lbchaos
// proxy, nginx and HAProxy (all round robin), in one run:
//
//   - the latency each adds at 4000 req/s on the baseline experiment (10
//     instances, 8 workers, fixed 10 ms, Poisson), as the difference of its
//     p50 and p99 from the same load balanced in the client ("direct"),
//     median of LBCHAOS_BENCH_ROUNDS (3) rounds;
//   - the highest rate, of 2000, 4000, 6000, ... req/s for 5 s each, at
//     which it still answers 99% of requests with 2xx within the 1 s
//     timeout and the generator keeps up, against instances with no
//     concurrency limit and a fixed 1 ms service time, so that the proxy
//     (and the machine) is the limit rather than the backends.
//
// Run it with -benchtime 1x (make bench-proxy); LBCHAOS_BIN names the
// lbchaos binary (else it is built), LBCHAOS_BENCH_DURATION the attack
// length of the latency part (default 10s). The lbchaos line's
// p50-ratio-vs-nginx is its added p50 over nginx's.
func BenchmarkProxyOverhead(b *testing.B) {
	runtest.Need(b, proxies.Installed(proxyspec.Nginx, "unused"))
	runtest.Need(b, proxies.Installed(proxyspec.HAProxy, "unused"))
	bin := runtest.Binary(b)
	base, d := benchBaseline(b)
	opts := Options{LbchaosBinary: bin}
	specs := []string{"lbchaos:round-robin", "nginx:round_robin", "haproxy:roundrobin"}

	// Latency: rounds of direct, then each proxy, back to back, so that
	// every proxy is compared with a direct run made moments before; the
	// medians over the rounds are reported, as this VM's timing drifts.
	rounds := benchRounds()
	added50, added99 := map[string][]float64{}, map[string][]float64{}
	measure := func(name string) reports.Latency {
		e, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{name}})
		if err != nil {
			b.Fatal(err)
		}
		e.Expect = nil // baseline's expectations are not what this measures
		sum, err := run(context.Background(), e, opts)
		if err != nil {
			b.Fatal(err)
		}
		if st := sum.Strategies[0]; st.GeneratorBehind {
			b.Logf("%s: the generator fell behind (%.0f req/s)", name, st.AchievedRate)
		}
		return sum.Strategies[0].LatencyMs
	}
	for round := range rounds {
		ref := measure("round-robin")
		b.Logf("round %d: direct (balanced in the client) p50 %.2f ms, p99 %.2f ms", round+1, ref.P50, ref.P99)
		for _, name := range specs {
			l := measure(name)
			added50[name] = append(added50[name], l.P50-ref.P50)
			added99[name] = append(added99[name], l.P99-ref.P99)
			b.Logf("round %d: %s p50 %.2f ms (+%.2f), p99 %.2f ms (+%.2f)", round+1, name, l.P50, l.P50-ref.P50, l.P99, l.P99-ref.P99)
		}
	}

	rateExp := runtest.MustExperiment(b, "proxy-rate", `
duration: 5s
rate: 1000
timeout: 1s
instances: {count: 10, workers: 0, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`)
	for _, name := range specs {
		b.Run(strings.SplitN(name, ":", 2)[0], func(b *testing.B) {
			var best float64
			for range b.N {
				best = 0
				for rate := 2000.0; rate <= 40000; rate += 2000 {
					e, err := rateExp.Apply(experiments.Overrides{Rate: rate, Strategies: []string{name}})
					if err != nil {
						b.Fatal(err)
					}
					sum, err := run(context.Background(), e, opts)
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
			b.ReportMetric(median(added50[name]), "added-p50-ms")
			b.ReportMetric(median(added99[name]), "added-p99-ms")
			b.ReportMetric(best, "max-req/s@99%")
			if name == specs[0] {
				// The goal: lbchaos proxy adds no more than nginx (<= 1).
				b.ReportMetric(median(added50[name])/median(added50["nginx:round_robin"]), "p50-ratio-vs-nginx")
			}
		})
	}
}

// median of xs (which it sorts); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// benchRounds is LBCHAOS_BENCH_ROUNDS, the rounds a comparing benchmark
// takes the median of (default 3).
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("LBCHAOS_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

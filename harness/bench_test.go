package harness

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// BenchmarkOverhead measures the harness's own latency on the baseline
// experiment (10 in-process instances, 8 workers, fixed 10 ms, Poisson 4000
// req/s): every request's measured latency minus the 10 ms service time is
// the cost of the generator, the balancer, the loopback hop and timer
// slack. Run it with -benchtime 1x; LBCHAOS_BENCH_DURATION sets the attack
// length per strategy (default 10s).
func BenchmarkOverhead(b *testing.B) {
	exp, err := experiments.Load("baseline")
	if err != nil {
		b.Fatal(err)
	}
	d := 10 * time.Second
	if v := os.Getenv("LBCHAOS_BENCH_DURATION"); v != "" {
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("LBCHAOS_BENCH_DURATION: %v", err)
		}
	}
	service := float64(exp.Instances.Service.Value) / float64(time.Millisecond)
	for _, name := range exp.Strategies {
		b.Run(name, func(b *testing.B) {
			e, err := exp.Apply(experiments.Overrides{Duration: d, Strategies: []string{name}})
			if err != nil {
				b.Fatal(err)
			}
			var p50, p99, rate float64
			for range b.N {
				sum, err := Run(context.Background(), e, Options{})
				if err != nil {
					b.Fatal(err)
				}
				st := sum.Strategies[0]
				if st.GeneratorBehind {
					b.Errorf("generator fell behind: %.0f req/s", st.AchievedRate)
				}
				p50, p99, rate = st.LatencyMs.P50, st.LatencyMs.P99, st.AchievedRate
			}
			b.ReportMetric(p50-service, "p50-overhead-ms")
			b.ReportMetric(p99-service, "p99-overhead-ms")
			b.ReportMetric(rate, "req/s")
		})
	}
}

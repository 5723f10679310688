package live

import (
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// BenchmarkOverheadProtocols measures the harness's own latency on the
// baseline experiment with round-robin over each protocol of the load:
// HTTP/1.1 keep-alive pools, and h2c over 1 and 4 connections per
// instance, every request multiplexed as a stream. Measured latency minus
// the 10 ms service time, as in BenchmarkOverhead. Run it with -benchtime
// 1x; LBCHAOS_BENCH_DURATION sets the attack length per case (default 10s).
func BenchmarkOverheadProtocols(b *testing.B) {
	exp, d := benchBaseline(b)
	service := float64(exp.Instances.Service.Value) / float64(time.Millisecond)
	cases := []struct {
		name     string
		protocol string
		conns    int
	}{
		{"http1", experiments.ProtocolHTTP1, 0},
		{"h2c-1conn", experiments.ProtocolH2C, 1},
		{"h2c-4conns", experiments.ProtocolH2C, 4},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e, err := exp.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
			if err != nil {
				b.Fatal(err)
			}
			e.Protocol, e.Connections = c.protocol, c.conns
			e.Expect = nil // baseline's expectations are not what this measures
			var p50, p99, rate, errs float64
			for range b.N {
				sum, err := run(b.Context(), e, Options{})
				if err != nil {
					b.Fatal(err)
				}
				st := sum.Strategies[0]
				if st.GeneratorBehind {
					b.Errorf("generator fell behind: %.0f req/s", st.AchievedRate)
				}
				p50, p99, rate, errs = st.LatencyMs.P50, st.LatencyMs.P99, st.AchievedRate, st.ErrorRatio
			}
			if errs != 0 {
				b.Errorf("error ratio %v, want 0", errs)
			}
			b.ReportMetric(p50-service, "p50-overhead-ms")
			b.ReportMetric(p99-service, "p99-overhead-ms")
			b.ReportMetric(rate, "req/s")
		})
	}
}

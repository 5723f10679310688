package live

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/reports"
)

// BenchmarkOverhead measures the harness's own latency on the baseline
// experiment (10 in-process instances, 8 workers, fixed 10 ms, Poisson 4000
// req/s): every request's measured latency minus the 10 ms service time is
// the cost of the generator, the balancer, the loopback hop and timer
// slack. Run it with -benchtime 1x; LBCHAOS_BENCH_DURATION sets the attack
// length per strategy (default 10s).
func BenchmarkOverhead(b *testing.B) {
	exp, d := benchBaseline(b)
	service := float64(exp.Instances.Service.Value) / float64(time.Millisecond)
	for _, name := range exp.Strategies {
		b.Run(name, func(b *testing.B) {
			e, err := exp.Apply(experiments.Overrides{Duration: d, Strategies: []string{name}})
			if err != nil {
				b.Fatal(err)
			}
			var p50, p99, rate float64
			for range b.N {
				sum, err := run(context.Background(), e, Options{})
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

func benchBaseline(b *testing.B) (*experiments.Experiment, time.Duration) {
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
	return exp, d
}

// BenchmarkOverheadBackends compares where the backends run, in one
// benchmark run: in-process, containers reached through published ports
// (the engine's userland docker-proxy), and containers in the host's
// network namespace. Load: baseline with round-robin. Besides the latency
// overhead it reports the whole machine's CPU use (from /proc/stat), which
// includes the containers, the proxy and the engine. Run with -benchtime 1x.
func BenchmarkOverheadBackends(b *testing.B) {
	exp, d := benchBaseline(b)
	e, err := exp.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	service := float64(exp.Instances.Service.Value) / float64(time.Millisecond)
	cases := []struct {
		name   string
		docker bool
		host   bool
	}{
		{"process", false, false},
		{"docker-published", true, false},
		{"docker-host", true, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var p fleet.Provider = process.Provider{}
			if c.docker {
				runtest.Need(b, docker.Available(b.Context()))
				dp, err := docker.New(b.Context(), docker.Options{Binary: runtest.Binary(b), HostNetwork: c.host})
				if err != nil {
					b.Fatal(err)
				}
				defer dp.Close(context.Background())
				p = dp
			}
			var st reports.Strategy
			var cores float64
			for range b.N {
				busy0, total0 := machineCPU(b)
				sum, err := run(b.Context(), e, Options{Provider: p})
				if err != nil {
					b.Fatal(err)
				}
				busy1, total1 := machineCPU(b)
				st = sum.Strategies[0]
				cores = float64(busy1-busy0) / float64(total1-total0) * float64(runtime.NumCPU())
			}
			b.ReportMetric(st.LatencyMs.P50-service, "p50-overhead-ms")
			b.ReportMetric(st.LatencyMs.P99-service, "p99-overhead-ms")
			b.ReportMetric(cores, "cpu-cores")
			b.ReportMetric(st.AchievedRate, "req/s")
		})
	}
}

// machineCPU returns the busy and total jiffies of all CPUs.
func machineCPU(b *testing.B) (busy, total uint64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Skipf("no /proc/stat: %v", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)[1:]
	for i, f := range fields {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// BenchmarkOverheadGRPC is BenchmarkOverhead for the gRPC load beside the
// HTTP/1.1 one: baseline's load as unary calls (protocol grpc), routed by
// the built-in round robin over per-instance connections and by grpc-go's
// own round_robin, against HTTP/1.1 requests with the built-in round robin.
// Run it with -benchtime 1x; LBCHAOS_BENCH_DURATION sets the attack length
// per case (default 10s).
func BenchmarkOverheadGRPC(b *testing.B) {
	exp, d := benchBaseline(b)
	service := float64(exp.Instances.Service.Value) / float64(time.Millisecond)
	cases := []struct{ protocol, strategy string }{
		{experiments.ProtocolHTTP1, "round-robin"},
		{experiments.ProtocolGRPC, "round-robin"},
		{experiments.ProtocolGRPC, "grpc:round_robin"},
	}
	for _, c := range cases {
		b.Run(c.protocol+"/"+c.strategy, func(b *testing.B) {
			base := *exp
			base.Protocol = c.protocol
			base.Expect = nil // measured, not judged
			if c.protocol != experiments.ProtocolHTTP1 {
				base.Connections = experiments.DefaultConnections
			}
			e, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{c.strategy}})
			if err != nil {
				b.Fatal(err)
			}
			var st reports.Strategy
			for range b.N {
				sum, err := run(context.Background(), e, Options{})
				if err != nil {
					b.Fatal(err)
				}
				st = sum.Strategies[0]
				if st.GeneratorBehind {
					b.Errorf("generator fell behind: %.0f req/s", st.AchievedRate)
				}
			}
			b.ReportMetric(st.LatencyMs.P50-service, "p50-overhead-ms")
			b.ReportMetric(st.LatencyMs.P99-service, "p99-overhead-ms")
			b.ReportMetric(st.AchievedRate, "req/s")
		})
	}
}

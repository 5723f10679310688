package sim

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// simLoad is an experiment of the baseline's shape (8 workers, Poisson
// arrivals, p2c) scaled to n instances at half their capacity, with service
// times of the given distribution ("fixed" or "exponential") and mean.
func simLoad(tb testing.TB, n int, dist string, service, duration time.Duration) *experiments.Experiment {
	tb.Helper()
	rate := 0.5 * float64(n) * 8 / service.Seconds()
	param := "value"
	if dist == "exponential" {
		param = "mean"
	}
	return runtest.MustExperiment(tb, "sim-load", fmt.Sprintf(`
duration: %v
rate: %v
instances: {count: %d, workers: 8, service: {dist: %s, %s: %v}}
strategies: [p2c]
`, duration, rate, n, dist, param, service))
}

// BenchmarkSim measures the simulator's speed in simulated requests per
// second of wall time (sim-req/s), on p2c at half capacity with a 10 ms
// service time, fixed or exponential: 10 instances at 4000 req/s for 60 s
// (240k requests per iteration) and 1000 instances at 400k req/s for 10 s
// (4M requests per iteration). With a fixed service time it also reports
// the speed as a ratio to the goal (x-goal, 1 or more meets it): 10M
// sim-req/s at 10 instances, 3M at 1000. An iteration at 10 instances
// simulates its run 20 times: one run lasts 20–40 ms, too short to time
// alone on a shared machine, and the first one pays for warming up.
func BenchmarkSim(b *testing.B) {
	for _, tc := range []struct {
		instances int
		duration  time.Duration
		goal      float64 // sim-req/s, fixed service
		runs      int     // simulated runs per iteration
	}{
		{10, 60 * time.Second, 10e6, 20},
		{1000, 10 * time.Second, 3e6, 1},
	} {
		for _, dist := range []string{"fixed", "exponential"} {
			b.Run(fmt.Sprintf("instances=%d/%s", tc.instances, dist), func(b *testing.B) {
				exp := simLoad(b, tc.instances, dist, 10*time.Millisecond, tc.duration)
				var reqs int64
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N * tc.runs {
					sum, err := runSim(context.Background(), exp, simOptions{})
					if err != nil {
						b.Fatal(err)
					}
					reqs += sum.Strategies[0].Requests
				}
				speed := float64(reqs) / b.Elapsed().Seconds()
				b.ReportMetric(speed, "sim-req/s")
				b.ReportMetric(float64(reqs)/float64(b.N*tc.runs), "req/run")
				if dist == "fixed" {
					b.ReportMetric(speed/tc.goal, "x-goal")
				}
			})
		}
	}
}

// BenchmarkSimMemory simulates 60M requests (1000 instances, 8 workers,
// 4 ms, 1M req/s for 60 s, 30 s timeout, p2c) and fails if the heap grows
// with the requests sent: the heap in use after the last minute's half must
// stay within a small margin of the heap after 15 s, when the collector's
// open buckets (timeout + 3 s of them) have filled. It reports the peak
// heap in use sampled at every virtual second and the process's peak RSS.
// Run it alone with -benchtime 1x; skipped with -short.
func BenchmarkSimMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("simulates 60M requests")
	}
	exp := simLoad(b, 1000, "fixed", 4*time.Millisecond, 60*time.Second)
	for range b.N {
		var (
			ms            runtime.MemStats
			peak, settled uint64
			last          uint64
		)
		hooks := simHooks{second: func(now time.Duration) {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			last = ms.HeapInuse
			if now == 35*time.Second {
				settled = ms.HeapInuse
			}
		}}
		start := time.Now()
		m, err := simStrategy(context.Background(), exp, "p2c", hooks)
		if err != nil {
			b.Fatal(err)
		}
		st := m.Strategy
		wall := time.Since(start)
		if last > settled+settled/4+(32<<20) {
			b.Errorf("heap in use grew from %d MB at 35 s to %d MB at the end", settled>>20, last>>20)
		}
		b.ReportMetric(float64(st.Requests), "requests")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(settled)/(1<<20), "heap-at-35s-MB")
		b.ReportMetric(float64(last)/(1<<20), "heap-at-end-MB")
		if rss := peakRSS(); rss > 0 {
			b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
		}
	}
}

// peakRSS returns the process's peak resident set size in bytes (VmHWM),
// or 0 where /proc is not available.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// BenchmarkSimShipped simulates the shipped fast-fail and slow-instance
// experiments in full (five strategies, 120k requests each): ns/op is the
// wall time of one whole experiment.
func BenchmarkSimShipped(b *testing.B) {
	for _, name := range []string{"fast-fail", "slow-instance"} {
		b.Run(name, func(b *testing.B) {
			exp, err := experiments.Load(name)
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				if _, err := runSim(context.Background(), exp, simOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// peerCost is one attack's cost and latency, the peer's or lbchaos's.
type peerCost struct {
	requests   int64
	procCPU    time.Duration // this process's user+system time
	allocs     uint64        // heap allocations in this process
	machineCPU time.Duration // the whole machine's busy time (/proc/stat)
	p50, p99   float64       // ms
	success    float64       // 2xx / requests
	onSchedule bool          // the generator sent at ≥ 99% of the rate asked for
	rate       float64       // requests sent per second
}

func (c peerCost) procUs() float64 {
	return float64(c.procCPU.Microseconds()) / float64(max(c.requests, 1))
}

func (c peerCost) allocsPerReq() float64 {
	return float64(c.allocs) / float64(max(c.requests, 1))
}

func (c peerCost) machineUs() float64 {
	return float64(c.machineCPU.Microseconds()) / float64(max(c.requests, 1))
}

// measureCPU runs f and returns the CPU this process and the whole
// machine spent meanwhile, and the heap allocations this process made (a
// count the machine's other load does not change). A collection first
// keeps the previous attack's garbage out of f's account.
func measureCPU(b *testing.B, f func()) (proc, machine time.Duration, allocs uint64) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	p0, _ := processCPU()
	busy0, _ := machineCPU(b)
	f()
	busy1, _ := machineCPU(b)
	p1, _ := processCPU()
	runtime.ReadMemStats(&m1)
	return p1 - p0, jiffies(busy1 - busy0), m1.Mallocs - m0.Mallocs
}

// jiffies converts /proc/stat ticks (USER_HZ, 100 on Linux) to time.
func jiffies(n uint64) time.Duration { return time.Duration(n) * 10 * time.Millisecond }

// peerServers starts n plain net/http servers on loopback that sleep
// service and answer 200 with an empty body, and returns their URLs and
// the function that stops them.
func peerServers(b *testing.B, n int, service time.Duration) ([]string, func()) {
	urls := make([]string, n)
	srvs := make([]*http.Server, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srvs[i] = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(service)
			w.WriteHeader(http.StatusOK)
		})}
		go srvs[i].Serve(ln)
		urls[i] = "http://" + ln.Addr().String() + "/"
	}
	return urls, func() {
		for _, s := range srvs {
			s.Close()
		}
	}
}

// poissonPacer sends requests with exponentially distributed gaps at rate
// per second, from a seeded source: the arrival of lbchaos's Poisson load,
// written as a plain Vegeta pacer. The arrival times are drawn up front, so
// Pace is a function of the hits alone.
type poissonPacer struct {
	at   []time.Duration // the due time of every hit
	rate float64
}

var _ vegeta.Pacer = poissonPacer{}

func newPoissonPacer(rate float64, d time.Duration, seed uint64) poissonPacer {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := poissonPacer{rate: rate}
	var t float64 // seconds
	for {
		t += rng.ExpFloat64() / rate
		if t >= d.Seconds() {
			return p
		}
		p.at = append(p.at, time.Duration(t*float64(time.Second)))
	}
}

func (p poissonPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= uint64(len(p.at)) {
		return 0, true
	}
	return max(p.at[hits]-elapsed, 0), false
}

func (p poissonPacer) Rate(time.Duration) float64 { return p.rate }

// runPeer is the peer: plain Vegeta (its own client, default workers, no
// worker limit) attacking n plain net/http servers round robin, all in
// this process, latency from Vegeta's own Metrics.
func runPeer(b *testing.B, n int, service time.Duration, pacer vegeta.Pacer, rate float64, d, timeout time.Duration) peerCost {
	urls, stop := peerServers(b, n, service)
	defer stop()
	var next atomic.Uint64
	targeter := func(t *vegeta.Target) error {
		t.Method, t.URL = http.MethodGet, urls[(next.Add(1)-1)%uint64(len(urls))]
		return nil
	}
	var m vegeta.Metrics
	var c peerCost
	c.procCPU, c.machineCPU, c.allocs = measureCPU(b, func() {
		a := vegeta.NewAttacker(vegeta.Timeout(timeout))
		for res := range a.Attack(targeter, pacer, d, "peer") {
			m.Add(res)
		}
		m.Close()
	})
	c.requests = int64(m.Requests)
	c.p50 = float64(m.Latencies.P50) / float64(time.Millisecond)
	c.p99 = float64(m.Latencies.P99) / float64(time.Millisecond)
	c.success = m.Success
	c.rate = m.Rate
	c.onSchedule = m.Rate >= 0.99*rate
	return c
}

// runLbchaos runs exp (one strategy) through the real engine with
// in-process backends.
func runLbchaos(b *testing.B, exp *experiments.Experiment) peerCost {
	var sum *reports.Summary
	var err error
	var c peerCost
	c.procCPU, c.machineCPU, c.allocs = measureCPU(b, func() {
		sum, err = run(context.Background(), exp, Options{})
	})
	if err != nil {
		b.Fatal(err)
	}
	st := sum.Strategies[0]
	c.requests = st.Requests
	c.p50, c.p99 = st.LatencyMs.P50, st.LatencyMs.P99
	c.success = st.SuccessRatio
	c.rate = st.AchievedRate
	c.onSchedule = !st.GeneratorBehind
	for _, h := range sum.HarnessSaturated {
		b.Logf("lbchaos: harness saturated: %+v", h)
	}
	return c
}

// BenchmarkPeer compares lbchaos with its peer, plain Vegeta attacking
// plain net/http servers, on the same load in one run (make bench-peer):
//
//   - baseline: 10 instances sleeping a fixed 10 ms, Poisson 4000 req/s,
//     round robin, LBCHAOS_BENCH_DURATION (default 10s) each; peer and
//     lbchaos alternate LBCHAOS_BENCH_ROUNDS (default 3) times and the medians are reported, so that
//     the machine's drift falls on both. cpu-ratio is lbchaos's CPU per
//     request over the peer's (this process's user+system time, which
//     holds the backends of both); machine-cpu-ratio the same from the
//     whole machine's busy time (/proc/stat, which other work on the
//     machine also shows in). p50-overhead-ratio is lbchaos's p50 minus
//     the service time over the peer's.
//   - sustained: fixed 1 ms, unlimited workers, constant arrival, 5 s
//     (LBCHAOS_BENCH_SUSTAINED sets it) at 10k, 15k and 20k req/s for
//     both: success ratio, p99 and whether the generator kept its rate.
//
// Run it with -benchtime 1x.
func BenchmarkPeer(b *testing.B) {
	b.Run("baseline", benchPeerBaseline)
	b.Run("sustained", benchPeerSustained)
}

func benchPeerBaseline(b *testing.B) {
	exp, d := benchBaseline(b)
	base := *exp
	base.Expect = nil // measured, not judged
	e, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	service := time.Duration(e.Instances.Service.Value)
	serviceMs := float64(service) / float64(time.Millisecond)
	rounds := benchRounds()
	var peerUs, lbUs, peerMUs, lbMUs, peerAllocs, lbAllocs, peerOn, lbOn, peerP50, lbP50, peerP99, lbP99, cpuRatio, mRatio, ovRatio []float64
	for range b.N {
		for r := range rounds {
			pacer := newPoissonPacer(e.Rate, e.Duration, e.Seed+uint64(r))
			peer := runPeer(b, e.Instances.Count, service, pacer, e.Rate, e.Duration, e.Timeout)
			lb := runLbchaos(b, e)
			b.Logf("round %d: peer %.1f µs/req (machine %.1f, %.0f allocs), p50 %.3f p99 %.3f ms, %d req; lbchaos %.1f µs/req (machine %.1f, %.0f allocs), p50 %.3f p99 %.3f ms, %d req",
				r, peer.procUs(), peer.machineUs(), peer.allocsPerReq(), peer.p50, peer.p99, peer.requests, lb.procUs(), lb.machineUs(), lb.allocsPerReq(), lb.p50, lb.p99, lb.requests)
			// Reported, not failed: a run on a machine busy with other work
			// still yields its ratios, and says that its generators fell behind.
			if !lb.onSchedule || !peer.onSchedule {
				b.Logf("round %d: generator behind: peer %.0f req/s (on schedule %v), lbchaos %.0f req/s (on schedule %v), asked %.0f",
					r, peer.rate, peer.onSchedule, lb.rate, lb.onSchedule, e.Rate)
			}
			peerOn, lbOn = append(peerOn, boolMetric(peer.onSchedule)), append(lbOn, boolMetric(lb.onSchedule))
			peerUs, lbUs = append(peerUs, peer.procUs()), append(lbUs, lb.procUs())
			peerMUs, lbMUs = append(peerMUs, peer.machineUs()), append(lbMUs, lb.machineUs())
			peerAllocs, lbAllocs = append(peerAllocs, peer.allocsPerReq()), append(lbAllocs, lb.allocsPerReq())
			peerP50, lbP50 = append(peerP50, peer.p50), append(lbP50, lb.p50)
			peerP99, lbP99 = append(peerP99, peer.p99), append(lbP99, lb.p99)
			cpuRatio = append(cpuRatio, lb.procUs()/peer.procUs())
			mRatio = append(mRatio, lb.machineUs()/peer.machineUs())
			ovRatio = append(ovRatio, (lb.p50-serviceMs)/(peer.p50-serviceMs))
		}
	}
	b.ReportMetric(median(peerUs), "peer-cpu-us/req")
	b.ReportMetric(median(lbUs), "lbchaos-cpu-us/req")
	b.ReportMetric(median(peerMUs), "peer-machine-us/req")
	b.ReportMetric(median(lbMUs), "lbchaos-machine-us/req")
	b.ReportMetric(median(peerAllocs), "peer-allocs/req")
	b.ReportMetric(median(lbAllocs), "lbchaos-allocs/req")
	b.ReportMetric(median(peerP50), "peer-p50-ms")
	b.ReportMetric(median(lbP50), "lbchaos-p50-ms")
	b.ReportMetric(median(peerP99), "peer-p99-ms")
	b.ReportMetric(median(lbP99), "lbchaos-p99-ms")
	b.ReportMetric(median(peerOn), "peer-on-schedule")
	b.ReportMetric(median(lbOn), "lbchaos-on-schedule")
	b.ReportMetric(median(cpuRatio), "cpu-ratio")
	b.ReportMetric(median(mRatio), "machine-cpu-ratio")
	b.ReportMetric(median(ovRatio), "p50-overhead-ratio")
}

func benchPeerSustained(b *testing.B) {
	d := 5 * time.Second
	if v := os.Getenv("LBCHAOS_BENCH_SUSTAINED"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("LBCHAOS_BENCH_SUSTAINED: %v", err)
		}
	}
	for _, rate := range []int{10000, 15000, 20000} {
		b.Run(fmt.Sprintf("%dk", rate/1000), func(b *testing.B) {
			exp, err := experiments.Parse("sustained.yaml", fmt.Appendf(nil, `
name: sustained
seed: 1
duration: %v
arrival: constant
rate: %d
timeout: 30s
instances: {count: 10, workers: 0, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`, d, rate))
			if err != nil {
				b.Fatal(err)
			}
			var peer, lb peerCost
			for range b.N {
				pacer := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
				peer = runPeer(b, exp.Instances.Count, time.Duration(exp.Instances.Service.Value), pacer, exp.Rate, exp.Duration, exp.Timeout)
				lb = runLbchaos(b, exp)
			}
			b.Logf("peer: %.0f req/s sent, success %.4f, p99 %.2f ms, on schedule %v, %.1f µs/req; lbchaos: %.0f req/s, success %.4f, p99 %.2f ms, on schedule %v, %.1f µs/req",
				peer.rate, peer.success, peer.p99, peer.onSchedule, peer.procUs(), lb.rate, lb.success, lb.p99, lb.onSchedule, lb.procUs())
			b.ReportMetric(peer.success, "peer-success")
			b.ReportMetric(lb.success, "lbchaos-success")
			b.ReportMetric(peer.p99, "peer-p99-ms")
			b.ReportMetric(lb.p99, "lbchaos-p99-ms")
			b.ReportMetric(boolMetric(peer.onSchedule), "peer-on-schedule")
			b.ReportMetric(boolMetric(lb.onSchedule), "lbchaos-on-schedule")
			b.ReportMetric(peer.procUs(), "peer-cpu-us/req")
			b.ReportMetric(lb.procUs(), "lbchaos-cpu-us/req")
			b.ReportMetric(lb.procUs()/peer.procUs(), "cpu-ratio")
		})
	}
}

func boolMetric(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

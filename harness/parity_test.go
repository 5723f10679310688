package harness_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

// Parity of the two engines: the same experiment, seed included, measured
// by the real engine against in-process backends and by the simulator must
// give the same headline metrics, within what the real transport adds.
//
// The simulator runs through the driver (harness.Run) in this process;
// the real engine with the process provider runs as `lbchaos run
// --backends process` (parityRunBinary).

// The two experiments are the shipped fast-fail and slow-instance shapes
// (10 instances of 8 workers serving a fixed 10 ms, Poisson arrivals,
// instance 0 faulty from the start), shortened to 3 s at 1500 req/s.
//
// The rate was set when the real side ran inside this test binary, under
// -race when make test builds it: a real request then cost about 0.45 ms
// of CPU, and at 1500 req/s the real side took about two thirds of one
// core of the 2-core machine it was calibrated on (2000 req/s most of it;
// at 3000 the generator fell behind). It now runs as its own process
// built without the detector (parityRunBinary), where 1500 req/s takes
// about a quarter of a core, leaving room for the noise of a shared CI
// machine. The bounds below were calibrated at this rate.
//
// Timeouts are short so that a queue that grows (round robin feeding the
// slow instance) is cut within a second of the attack's end rather than
// drained for many seconds: on slow-instance the 1 s timeout and 500 ms
// slow threshold make round robin's timeout and slow ratios a few percent,
// the metrics that experiment is about. On fast-fail nothing should time
// out; its 2 s timeout only bounds a stalled run.
const (
	parityFastFail = `name: parity-fast-fail
seed: 1
duration: 3s
arrival: poisson
rate: 1500
timeout: 2s
slow_threshold: 1s
instances: {count: 10, workers: 8, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies: [round-robin, p2c, least-inflight, "` + parityEject + `"]
`
	paritySlowInstance = `name: parity-slow-instance
seed: 1
duration: 3s
arrival: poisson
rate: 1500
timeout: 1s
slow_threshold: 500ms
instances: {count: 10, workers: 8, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: slow, latency: 100ms}}
strategies: [round-robin, p2c, least-inflight, "` + parityEject + `"]
`
	// parityEject ejects after 5 consecutive failures for a constant
	// 500 ms (max_duration keeps the ejection time from growing), so a
	// 3 s run has about six ejections to count rather than one or two.
	parityEject = "least-inflight+eject(consecutive=5,duration=500ms,max_duration=500ms)"
)

// parityMetric is one headline metric compared between the engines.
type parityMetric struct {
	name string
	get  func(reports.Strategy) float64
}

var parityMetrics = []parityMetric{
	{"requests", func(s reports.Strategy) float64 { return float64(s.Requests) }},
	{"achieved_rate", func(s reports.Strategy) float64 { return s.AchievedRate }},
	{"error_ratio", func(s reports.Strategy) float64 { return s.ErrorRatio }},
	{"faulty_share", func(s reports.Strategy) float64 { return s.FaultyShare }},
	{"timeout_ratio", func(s reports.Strategy) float64 { return s.TimeoutRatio }},
	{"slow_ratio", func(s reports.Strategy) float64 { return s.SlowRatio }},
	{"p50_ms", func(s reports.Strategy) float64 { return s.LatencyMs.P50 }},
	{"ejections", func(s reports.Strategy) float64 { return float64(s.Ejections) }},
}

// parityBound is the range allowed for real minus sim, or with rel for
// (real-sim)/sim, both ends included.
type parityBound struct {
	lo, hi float64
	rel    bool
}

// diff returns what b bounds: real-sim, or (real-sim)/sim.
func (b parityBound) diff(sim, measured float64) float64 {
	if b.rel {
		return (measured - sim) / sim
	}
	return measured - sim
}

func (b parityBound) holds(d float64) bool { return d >= b.lo && d <= b.hi }

func (b parityBound) String() string {
	if b.rel {
		return fmt.Sprintf("(real-sim)/sim in [%+.4g, %+.4g]", b.lo, b.hi)
	}
	return fmt.Sprintf("real-sim in [%+.4g, %+.4g]", b.lo, b.hi)
}

// parityBounds returns the bound of metric for strategy in experiment exp
// ("fast-fail" or "slow-instance").
//
// Every bound comes from one calibration: 29 real runs of each strategy
// (19 under -race, 10 without; part of them while other
// benchmarks and tests ran), each compared with the simulation of the same
// seed, keeping the runs this test would keep (parityMaxLagMs). The numbers
// quoted are real minus sim over those runs: [min, max] and the median.
// The schedule has 4387 requests, so one request is 0.00023 of a ratio.
// Rule: a bound is the measured range widened by three standard deviations
// of the spread, and by at least two requests, rounded outward. Where the
// difference has a cause, the comment names it.
func parityBounds(exp, strategy, metric string) parityBound {
	ratio := metric == "error_ratio" || metric == "faulty_share" || metric == "timeout_ratio" || metric == "slow_ratio"
	switch {
	case metric == "requests" || metric == "achieved_rate":
		// Both engines send the same arrival schedule, so the counts can
		// differ only at the attack's end, where the real generator stops
		// and drops what it has not sent yet: [-2, +1] requests
		// ([-0.00046, +0.00023] relative), median 0, every strategy. On
		// a noisy day of the same machine a run whose send lag kept
		// within parityMaxLagMs still left 13 unsent at its end
		// (-0.003), so the bound allows 17.
		return parityBound{-0.004, +0.001, true}

	case metric == "p50_ms":
		// The real latency is the service time plus loopback HTTP, the
		// balancing transport and scheduling; it is never below the
		// service time, which is what the simulator reports (10.007 ms:
		// 10 ms in the histogram's precision): [+0.21, +0.45] ms, median
		// +0.24 to +0.38 by strategy (real runs built without -race, as
		// parityRunBinary runs them).
		return parityBound{0, 1, false}

	case metric == "ejections":
		// Six ejections in both engines in every run: least-inflight
		// sends the faulty instance five requests within a few
		// milliseconds of its re-admission, so each 500 ms ejection starts
		// at almost the same moment in both. One more or less allows for
		// an ejection falling on the other side of the attack's end. The
		// other strategies do not eject, and nothing fails on
		// slow-instance.
		if exp == "fast-fail" && strings.Contains(strategy, "+eject") {
			return parityBound{-1, +1, false}
		}
		return parityBound{0, 0, false}

	case !ratio:
		panic("parityBounds: unknown metric " + metric)
	}

	switch exp + " " + strategy {
	case "fast-fail round-robin":
		if metric == "error_ratio" || metric == "faulty_share" {
			// Round robin gives instance 0 every tenth request whatever
			// the timing, and exactly those fail: [-0.00002, 0], the last
			// round's one request. Bound: two requests.
			return parityBound{-0.0005, +0.0005, false}
		}

	case "fast-fail p2c":
		if metric == "error_ratio" || metric == "faulty_share" {
			// The least-inflight gap (parityLeastInflightGap), diluted:
			// p2c compares the in-flight counts of two random instances
			// only. [-0.0130, -0.0039], median -0.0082 (-0.0063 without
			// -race, -0.0091 with it), sim 0.1628.
			return parityBound{-0.02, +0.003, false}
		}

	case "fast-fail least-inflight":
		if metric == "error_ratio" || metric == "faulty_share" {
			// On fast-fail every request to instance 0 fails and no other
			// does, so the error ratio is the faulty share.
			return parityLeastInflightGap
		}

	case "fast-fail " + parityEject:
		if metric == "error_ratio" || metric == "faulty_share" {
			// Five failures open each ejection, plus the requests
			// already on their way to instance 0: [-0.00046, +0.00068]
			// ([-2, +3] requests), median 0, sim 0.0073. Bound: nine
			// requests, about one ejection more or less.
			return parityBound{-0.002, +0.002, false}
		}

	case "slow-instance round-robin":
		switch metric {
		case "faulty_share":
			// Every tenth request, as on fast-fail: [-0.00002, 0].
			return parityBound{-0.0005, +0.0005, false}
		case "error_ratio", "timeout_ratio":
			// Every error is a timeout: round robin queues requests on
			// the slow instance until they time out at 1 s. A real
			// request takes a little longer in transit and the server
			// learns of a timeout a little late, so a few more time out
			// in real runs: [+0.00067, +0.00113] ([+3, +5] requests),
			// median +0.00068, sim 0.0629. On a noisy day of the same
			// machine, alone on it: +0.00068, +0.00158 and +0.0025 (11
			// requests), so the bound allows 13.
			return parityBound{-0.0005, +0.003, false}
		case "slow_ratio":
			// Slower than 500 ms, from the same queue: [-0.00002,
			// +0.00091], median +0.0002, sim 0.0837; +0.0018 on the
			// noisy day above.
			return parityBound{-0.001, +0.003, false}
		}

	case "slow-instance p2c":
		if metric == "faulty_share" {
			// A real request holds its healthy instance about 1 ms
			// longer than the simulated one (the transport's share of
			// the latency), so next to the slow instance the healthy
			// ones look busier and the slow one is picked a little more
			// often: [+0.00046, +0.0050], median +0.0016, sim 0.0221.
			return parityBound{-0.003, +0.008, false}
		}

	case "slow-instance least-inflight", "slow-instance " + parityEject:
		if metric == "faulty_share" {
			// The same cause as p2c's, undiluted; with or without eject,
			// which never acts here: [+0.0011, +0.0068], median +0.0023
			// (least-inflight) and +0.0030 (eject), sim 0.0157 and
			// 0.0153.
			return parityBound{-0.002, +0.01, false}
		}
	}
	// Every other ratio is 0 in both engines in every calibration run:
	// nothing fails on slow-instance but round robin's timeouts, and
	// nothing is slow or times out on fast-fail. Bound: two requests.
	return parityBound{0, +0.0005, false}
}

// parityLeastInflightGap bounds least-inflight's faulty share and error
// ratio on fast-fail, relative to the simulator's: the real share is about
// a fifth lower, a known and explained difference. Least-inflight picks the
// instance with the fewest requests in flight; failing in 1 ms keeps
// instance 0 the emptiest, so the simulator sends it 0.341 of the requests.
// In real runs that "1 ms" failure takes about 1.4 ms from pick to done
// (loopback HTTP and scheduling add ~0.4 ms per request), so instance 0
// holds each request 40% longer and wins fewer picks. (real-sim)/sim
// measured: [-0.310, -0.154], median -0.211; without -race [-0.172,
// -0.154], median -0.167 (real 0.285); under -race, where the round trip
// costs more, [-0.310, -0.197], median -0.239 (real 0.260). The bound
// asserts the direction and the size of the gap: real lower by 7% to 40%,
// neither equal to the model nor a different behaviour.
var parityLeastInflightGap = parityBound{-0.40, -0.07, true}

// parityMaxLagMs is the largest send lag (p99, ms) of a real run that
// measured the experiment. The lag is how late the generator sent requests
// against their schedule; it depends on the machine alone, not on the
// strategy or the backends' model, so a run above it is repeated rather
// than compared. In the calibration runs it was 1.1 to 4.7 ms without
// -race (median 2.6); under -race its median was 3.4 ms and its 90th
// percentile 12 ms. The runs above 15 ms came when another
// real-load run shared the machine, and their numbers show it: p50 up to
// 4.6 ms above the model's, least-inflight's share 0.19 instead of 0.26.
const parityMaxLagMs = 15

// parityAttempts bounds the real runs of one strategy that may be spent
// looking for one in which the generator kept to its schedule. On a noisy
// day of the CI machine about a third of the runs went above the limit
// (15 to 44 ms, the same with this package's build before and after a
// change to the backends' sleeper, alone on the machine); three attempts
// then left one of the eight strategies without a run often enough to fail
// a CI run in two, five rarely do.
const parityAttempts = 5

// TestParityRealVsSim runs each parity experiment through the simulator
// and, strategy by strategy, through the real engine against in-process
// backends with the same seed, and checks that every headline metric
// agrees within its bound (parityBounds). With -v it logs every
// comparison.
func TestParityRealVsSim(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for about half a minute")
	}
	for _, yaml := range []string{parityFastFail, paritySlowInstance} {
		exp := parityExperiment(t, yaml)
		t.Run(exp.Name, func(t *testing.T) {
			simmed, err := harness.Run(context.Background(), exp, harness.Options{Engine: sim.Engine{}})
			if err != nil {
				t.Fatalf("sim: %v", err)
			}
			for i, name := range exp.Strategies {
				if measured := parityReal(t, exp.Name, yaml, name); measured != nil {
					for _, f := range compareParity(t, strings.TrimPrefix(exp.Name, "parity-"), simmed.Strategies[i], *measured) {
						t.Error(f)
					}
				}
			}
		})
	}
}

// parityExperiment loads an experiment from YAML text as the experiment
// files are loaded.
func parityExperiment(t *testing.T, yaml string) *experiments.Experiment {
	t.Helper()
	name, _, _ := strings.Cut(strings.TrimPrefix(yaml, "name: "), "\n")
	exp, err := experiments.Parse(name+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// parityReal measures strategy name of exp with the real engine against
// in-process backends, alone, on a fresh fleet: `lbchaos run --backends
// process` of the same experiment, from a binary built without the race
// detector whatever this test binary was built with (parityRunBinary). A
// run whose generator fell behind its schedule (parityMaxLagMs) is
// repeated, up to parityAttempts runs in all; it returns nil, with the
// test failed, when none kept to it.
func parityReal(t *testing.T, expName, yaml, name string) *reports.Strategy {
	t.Helper()
	bin := runtest.Binary(t)
	var lags []string
	for range parityAttempts {
		st := parityRunBinary(t, bin, expName, yaml, name)
		if !st.GeneratorBehind && st.SendLagMs.P99 <= parityMaxLagMs {
			t.Logf("%s: real run with send lag p99 %.1f ms", name, st.SendLagMs.P99)
			return &st
		}
		t.Logf("%s: real run not compared: send lag p99 %.1f ms (limit %d), generator behind %v: the machine was overloaded",
			name, st.SendLagMs.P99, parityMaxLagMs, st.GeneratorBehind)
		lags = append(lags, fmt.Sprintf("%.1f ms", st.SendLagMs.P99))
	}
	t.Errorf("%s: none of %d real runs kept to the schedule (send lag p99 %s; limit %d ms): the machine was too busy to compare the engines",
		name, parityAttempts, strings.Join(lags, ", "), parityMaxLagMs)
	return nil
}

// parityRunBinary runs strategy name of experiment expName, written in
// yaml, once with the lbchaos binary bin (real engine, in-process backends,
// no raw files) and returns the strategy from the run's summary.json.
//
// The real side runs in its own process so that it is measured as users
// run it. Under -race every step of a real request is instrumented (about
// 0.45 ms of CPU per request, three times the cost without), and on a
// noisy 2-core CI machine that alone pushed the generator's send lag past
// parityMaxLagMs in most runs: the comparison measured the detector, not
// the engines. The race detector still covers the same code in this
// package's and the real engine's other tests.
func parityRunBinary(t *testing.T, bin, expName, yaml, name string) reports.Strategy {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, expName+".yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "run", file, "--engine", "real", "--backends", "process",
		"--strategies", name, "--raw=false", "--quiet", "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("lbchaos run %s: %v\n%s", name, err, b)
	}
	f, err := os.Open(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := reports.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Strategies) != 1 || sum.Strategies[0].Name != name {
		t.Fatalf("lbchaos run %s: summary.json holds %d strategies, want %s alone", name, len(sum.Strategies), name)
	}
	return sum.Strategies[0]
}

// compareParity compares every headline metric of one strategy of
// experiment exp, logs each comparison, and returns the failures.
func compareParity(t *testing.T, exp string, sim, measured reports.Strategy) (failures []string) {
	t.Helper()
	if sim.Name != measured.Name {
		t.Fatalf("comparing %s (sim) with %s (real)", sim.Name, measured.Name)
	}
	for _, m := range parityMetrics {
		s, r := m.get(sim), m.get(measured)
		b := parityBounds(exp, sim.Name, m.name)
		d := b.diff(s, r)
		ok := b.holds(d) && !math.IsNaN(d)
		t.Logf("%s | %s | %-13s | sim %-9.6g | real %-9.6g | %+.4g, %v | ok %v", exp, sim.Name, m.name, s, r, d, b, ok)
		if !ok {
			failures = append(failures, fmt.Sprintf("%s: %s: real %.6g, sim %.6g: %+.4g, want %v", sim.Name, m.name, r, s, d, b))
		}
	}
	return failures
}

package live

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/reports"
)

const generatorsExperiment = `
seed: 5
duration: 3s
rate: 400
timeout: 5s
instances: {count: 5, workers: 8, service: {dist: fixed, value: 5ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies: [round-robin, "lbchaos:round-robin"]
`

// TestGeneratorsAgreeWithOneProcess runs a short fast-fail on process
// backends with one generator and with two (two lbchaos generate
// processes, their streams merged), for a built-in round robin and for a
// proxy (lbchaos:round-robin, which both generators send to), and compares
// the headline metrics.
//
// Tolerances, against what was measured (2 cores, the test binary built
// with the race detector): requests are exact, as both send every arrival
// of the one schedule before the end (1257 and 1257, for either
// strategy). Round robin's faulty share is 1/5 in one process; two
// independent round robins, each over its own half of the requests, give
// each instance about a fifth too, and the proxy is one round robin
// either way: ±0.01 (0.2005 and 0.2005 for both). The error ratio is the
// faulty share, the faulty instance failing every request: ±0.01. The
// median latency is the 5 ms service plus the client's overhead: ±2 ms for
// the built-in strategy (6.4 and 6.1 ms); through the proxy the one-process
// client, under the race detector here, adds more than the generators
// (plain builds) do: ±8 ms (11.2 and 6.9 ms).
func TestGeneratorsAgreeWithOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	bin := runtest.Binary(t)
	one := runtest.MustExperiment(t, "gens-one", generatorsExperiment)
	two := runtest.MustExperiment(t, "gens-two", generatorsExperiment+"generators: 2\n")
	dir := t.TempDir()
	sumOne, err := run(context.Background(), one, Options{Provider: process.Provider{}, LbchaosBinary: bin})
	if err != nil {
		t.Fatal(err)
	}
	sumTwo, err := run(context.Background(), two, Options{Provider: process.Provider{}, LbchaosBinary: bin, RawDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sumTwo.Generators != 2 || sumOne.Generators != 0 {
		t.Errorf("summary generators: %d and %d, want 0 (one) and 2", sumOne.Generators, sumTwo.Generators)
	}
	for i, name := range one.Strategies {
		a, b := sumOne.Strategies[i], sumTwo.Strategies[i]
		runtest.CheckAccounting(t, a)
		runtest.CheckAccounting(t, b)
		t.Logf("%s: one: %d requests, faulty share %.4f, error ratio %.4f, p50 %.1f ms; two: %d, %.4f, %.4f, %.1f ms",
			name, a.Requests, a.FaultyShare, a.ErrorRatio, a.LatencyMs.P50, b.Requests, b.FaultyShare, b.ErrorRatio, b.LatencyMs.P50)
		if a.Requests != b.Requests {
			t.Errorf("%s: requests: one generator %d, two %d", name, a.Requests, b.Requests)
		}
		if a.GeneratorBehind || b.GeneratorBehind || a.Partial || b.Partial {
			t.Errorf("%s: behind %v/%v, partial %v/%v", name, a.GeneratorBehind, b.GeneratorBehind, a.Partial, b.Partial)
		}
		near := func(what string, x, y, tol float64) {
			if math.Abs(x-y) > tol {
				t.Errorf("%s: %s: one generator %v, two %v; want within %v", name, what, x, y, tol)
			}
		}
		near("faulty share", a.FaultyShare, b.FaultyShare, 0.01)
		near("error ratio", a.ErrorRatio, b.ErrorRatio, 0.01)
		p50tol := 2.0
		if strings.Contains(name, ":") {
			p50tol = 8
		}
		near("p50 ms", a.LatencyMs.P50, b.LatencyMs.P50, p50tol)
		if b.Instances[0].ErrorRatio != 1 {
			t.Errorf("%s: two generators: faulty instance error ratio %v, want 1", name, b.Instances[0].ErrorRatio)
		}
		// The generators' raw results, concatenated: one per request.
		if n := countResults(t, openResults(t, dir, reports.StrategyDirs(two.Strategies)[i])); n != b.Requests {
			t.Errorf("%s: raw results: %d, want %d", name, n, b.Requests)
		}
	}
}

func countResults(t *testing.T, r io.Reader) int64 {
	t.Helper()
	dec := vegeta.NewDecoder(r)
	var n int64
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("raw results: after %d: %v", n, err)
			}
			return n
		}
		n++
	}
}

func TestCheckGenerators(t *testing.T) {
	crash, err := experiments.Load("crash")
	if err != nil {
		t.Fatal(err)
	}
	two := *crash
	two.Generators = 2
	tests := []struct {
		name    string
		exp     *experiments.Experiment
		lbchaos engine.Launcher
		want    string
	}{
		{"one generator", crash, nil, ""},
		{"no executable", &two, nil, "generators (2): the generators are lbchaos processes (lbchaos generate), and the engine was given no lbchaos executable"},
		{"an instance that moves", &two, LocalLauncher{Binary: "/bin/lbchaos"}, `generators (2): mode "kill" brings the instance back on a new address, which the generators do not follow; run it with one generator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkGenerators(tt.exp, tt.lbchaos)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// generatorPIDs returns the pids of this process's children that run
// `lbchaos generate`.
func generatorPIDs(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte("\x00generate\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGenerators waits until n generators run and returns their pids.
func waitGenerators(t *testing.T, n int) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if pids := generatorPIDs(t); len(pids) == n {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%d generators did not start", n)
	return nil
}

func TestGeneratorKilledFailsTheRun(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("real load; reads /proc")
	}
	exp := runtest.MustExperiment(t, "gens-kill", strings.Replace(generatorsExperiment, "duration: 3s", "duration: 6s", 1)+"generators: 2\n")
	errc := make(chan error, 1)
	go func() {
		_, err := run(context.Background(), exp, Options{Provider: process.Provider{}, LbchaosBinary: runtest.Binary(t)})
		errc <- err
	}()
	pids := waitGenerators(t, 2)
	time.Sleep(1500 * time.Millisecond) // into the attack
	var victim int
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if bytes.Contains(cmdline, []byte("\x00--generator\x001\x00")) {
			victim = pid
		}
	}
	if victim == 0 {
		t.Fatalf("no generator 1 among %v", pids)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after a generator was killed")
	}
	want := "generator 1 (pid " + strconv.Itoa(victim) + "): exited: signal: killed"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "stream truncated") {
		t.Fatalf("error %v, want one saying %q and that its stream was truncated", err, want)
	}
	if left := generatorPIDs(t); len(left) > 0 {
		t.Errorf("generators left running: %v", left)
	}
}

func TestGeneratorsCancelLeavesNoProcess(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("real load; reads /proc")
	}
	exp := runtest.MustExperiment(t, "gens-cancel", strings.Replace(generatorsExperiment, "duration: 3s", "duration: 20s", 1)+"generators: 3\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sum *reports.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := run(ctx, exp, Options{Provider: process.Provider{}, LbchaosBinary: runtest.Binary(t)})
		done <- result{sum, err}
	}()
	waitGenerators(t, 3)
	time.Sleep(2500 * time.Millisecond) // into the attack
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after its cancellation")
	}
	if !errors.Is(r.err, harness.ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", r.err)
	}
	if left := generatorPIDs(t); len(left) > 0 {
		t.Errorf("generators left running: %v", left)
	}
	// The generators ended their streams with what they measured.
	if r.sum == nil || len(r.sum.Strategies) != 1 || !r.sum.Strategies[0].Partial || r.sum.Strategies[0].Requests == 0 {
		t.Fatalf("want one partial strategy with requests, got %+v", r.sum)
	}
	runtest.CheckAccounting(t, r.sum.Strategies[0])
}

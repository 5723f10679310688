package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/reports"
)

// highestCleanRate is the highest rate at which in-process backends of
// 1 ms kept up on this project's 2-core machine without the race
// detector (docs/performance-log.md). LBCHAOS_CLEAN_RATE overrides it when
// the harness gets faster.
const highestCleanRate = 10000

// saturationExperiment is the load of TestHarnessSaturation: ten
// unlimited in-process instances of 1 ms, so that the backends are never
// the bottleneck and whatever saturates is this process.
const saturationExperiment = `name: saturation
seed: 1
duration: 3s
arrival: poisson
rate: 1000
timeout: 5s
slow_threshold: 1s
instances: {count: 10, workers: 0, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`

// TestHarnessSaturation runs past this machine's capacity and checks that
// the run says, in summary.json and in the first lines of report.md,
// report.html and the terminal table, that the harness saturated and from
// which second: at 25k req/s and at twice the highest clean rate, 3 s
// each. A run at 500 req/s is the control: not saturated. Under the race
// detector the clean rate is far lower, so both loads are past it too.
//
// It loads the whole machine for about 15 s: it never runs in parallel
// with other tests of this package, and it is skipped with -short. Run it
// alone: go test -count=1 -run TestHarnessSaturation ./cmd/lbchaos/
func TestHarnessSaturation(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the machine past its capacity")
	}
	clean := float64(highestCleanRate)
	if v := os.Getenv("LBCHAOS_CLEAN_RATE"); v != "" {
		var err error
		if clean, err = strconv.ParseFloat(v, 64); err != nil || clean <= 0 {
			t.Fatalf("LBCHAOS_CLEAN_RATE=%q: want a rate in req/s", v)
		}
	}
	file := filepath.Join(t.TempDir(), "saturation.yaml")
	if err := os.WriteFile(file, []byte(saturationExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{25000, 2 * clean} {
		t.Run(fmt.Sprintf("%g req/s", rate), func(t *testing.T) {
			out, stdout := runSaturation(t, file, rate)
			s := readSummary(t, out)
			st := &s.Strategies[0]
			h := st.Harness
			if h == nil {
				t.Fatal("summary.json has no harness section")
			}
			logHarness(t, st)
			if !h.Saturated || h.SaturatedFromS == nil {
				t.Fatalf("harness not judged saturated at %g req/s: %+v", rate, h.Seconds)
			}
			from := *h.SaturatedFromS
			if from < 0 || from >= s.DurationS || h.SaturatedSeconds < 1 {
				t.Errorf("saturated from %v s, %d seconds, in an attack of %v s", from, h.SaturatedSeconds, s.DurationS)
			}
			if !h.BackendsInProcess || len(h.Reasons) < 3 || !strings.HasPrefix(h.Reasons[0], "CPU ") {
				t.Errorf("backends in process %v, reasons %q", h.BackendsInProcess, h.Reasons)
			}
			if len(s.HarnessSaturated) != 1 || s.HarnessSaturated[0].Strategy != "round-robin" || s.HarnessSaturated[0].FromS != from {
				t.Errorf("harness_saturated = %+v, want round-robin from %v s", s.HarnessSaturated, from)
			}
			want := fmt.Sprintf("The harness saturated: from %s s on", strconv.FormatFloat(from, 'f', -1, 64))
			// summary.json names it before the strategies, in its first lines.
			js := readFile(t, filepath.Join(out, reports.SummaryFile))
			if i, j := strings.Index(js, `"harness_saturated"`), strings.Index(js, `"strategies"`); i < 0 || i > j || !strings.Contains(js[:j], want) {
				t.Errorf("summary.json does not open with the saturation:\n%.1200s", js)
			}
			md := readFile(t, filepath.Join(out, reports.MarkdownFile))
			if first := firstLines(md, 6); !strings.Contains(first, want) || !strings.Contains(first, "round-robin's numbers describe this machine's load generator") {
				t.Errorf("report.md does not open with %q:\n%s", want, first)
			}
			html := readFile(t, filepath.Join(out, reports.HTMLFile))
			if i, j := strings.Index(html, want), strings.Index(html, `id="verdict"`); i < 0 || i > j {
				t.Errorf("report.html does not show %q before the verdict", want)
			}
			if first := strings.TrimSpace(stdout); !strings.HasPrefix(first, want) {
				t.Errorf("the terminal table does not open with %q:\n%s", want, firstLines(stdout, 4))
			}
		})
	}
	t.Run("control at 500 req/s", func(t *testing.T) {
		out, stdout := runSaturation(t, file, 500)
		s := readSummary(t, out)
		st := &s.Strategies[0]
		h := st.Harness
		if h == nil {
			t.Fatal("summary.json has no harness section")
		}
		logHarness(t, st)
		if len(h.Seconds) < 3 || len(h.Samples) < 2 || h.Samples[0].Goroutines == 0 {
			t.Errorf("%d seconds and samples %+v, want 3 seconds and a sample at the start and at the end", len(h.Seconds), h.Samples)
		}
		if h.Saturated && takenByOthers(h) {
			// The verdict is right: the harness got too little CPU to
			// keep the schedule. It is the machine's load, not this test's.
			t.Skipf("other processes took this machine's CPU during the control run (reasons %q); the run was rightly judged saturated", h.Reasons)
		}
		if h.Saturated || len(s.HarnessSaturated) > 0 {
			t.Errorf("a run at 500 req/s judged saturated: %q, from %v s", h.Reasons, *h.SaturatedFromS)
		}
		for name, text := range map[string]string{"report.md": readFile(t, filepath.Join(out, reports.MarkdownFile)), "terminal": stdout} {
			if strings.Contains(text, "harness saturated") {
				t.Errorf("%s names a saturated harness at 500 req/s", name)
			}
		}
	})
}

// runSaturation runs the experiment file at rate with in-process backends
// and returns its output directory and what it printed.
func runSaturation(t *testing.T, file string, rate float64) (out, stdout string) {
	t.Helper()
	out = t.TempDir()
	stdout, stderr, err := runCLI(t, context.Background(), "run", file, "--backends", "process", "--rate", strconv.FormatFloat(rate, 'f', -1, 64),
		"--out", out, "--raw=false", "--quiet")
	if err != nil {
		t.Fatalf("run at %g req/s: %v\n%s", rate, err, stderr)
	}
	return out, stdout
}

// takenByOthers reports whether, in every saturated second, this process
// used less than half its cores while the whole machine was busy.
func takenByOthers(h *reports.Harness) bool {
	for _, s := range h.Seconds {
		if s.Saturated && (s.CPUCores >= h.Cores/2 || s.MachineCores == nil || *s.MachineCores < 0.9*float64(h.MachineCPUs)) {
			return false
		}
	}
	return true
}

func logHarness(t *testing.T, st *reports.Strategy) {
	t.Helper()
	h := st.Harness
	from := "-"
	if h.SaturatedFromS != nil {
		from = strconv.FormatFloat(*h.SaturatedFromS, 'f', -1, 64)
	}
	t.Logf("achieved %.0f req/s, errors %.1f%%, p50 %.1f ms; harness: saturated %v from %s s (%d s), CPU p50 %.2f max %.2f of %g, scheduler p99 %.1f ms; %q",
		st.AchievedRate, 100*st.ErrorRatio, st.LatencyMs.P50, h.Saturated, from, h.SaturatedSeconds, h.CPUCoresP50, h.CPUCoresMax, h.Cores, h.SchedLagMs.P99, h.Reasons)
	for _, s := range h.Seconds {
		machine := -1.0
		if s.MachineCores != nil {
			machine = *s.MachineCores
		}
		t.Logf("  %d s: cpu %.2f machine %.2f sched p99 %.1f ms, sent %d, send lag mean %.1f max %.1f ms, in flight %d, cap hits %d, saturated %v",
			s.TS, s.CPUCores, machine, s.SchedLagP99Ms, s.Sent, s.SendLagMeanMs, s.SendLagMaxMs, s.InFlight, s.CapHits, s.Saturated)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// TestSimRunHasNoHarness: the simulator has no load generator to watch,
// so its summary has no harness section and no saturation.
func TestSimRunHasNoHarness(t *testing.T) {
	file := filepath.Join(t.TempDir(), "saturation.yaml")
	if err := os.WriteFile(file, []byte(saturationExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	// Far past what a real harness on this machine could send.
	if _, stderr, err := runCLI(t, context.Background(), "run", file, "--engine", "sim", "--rate", "200000", "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	s := readSummary(t, out)
	if s.Strategies[0].Harness != nil || s.HarnessSaturated != nil {
		t.Errorf("a simulated run has harness %+v, saturated %+v", s.Strategies[0].Harness, s.HarnessSaturated)
	}
	if js := readFile(t, filepath.Join(out, reports.SummaryFile)); strings.Contains(js, `"harness`) {
		t.Error("summary.json of a simulated run names the harness")
	}
}

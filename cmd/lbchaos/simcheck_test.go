package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/reports"
)

// TestSimcheck compares a run made to look real (a short simulation given
// a transport overhead) with its simulations, and writes the calibrated
// one's report with the real figures beside its own.
func TestSimcheck(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "real")
	if _, _, err := runCLI(t, ctx, "run", "fast-fail", "--engine", "sim", "--duration", "2s", "--strategies", "round-robin,least-inflight", "--out", dir, "--quiet"); exitCode(err) > 3 {
		t.Fatal(err)
	}
	sum := readSummary(t, dir)
	sum.Engine, sum.Backends = "real", "process"
	for i := range sum.Strategies {
		sum.Strategies[i].TransportOverheadMs = &reports.Overhead{Count: 100, Mean: 0.4, P1: 0.1, P10: 0.2, P50: 0.4, P90: 0.6, P99: 1, P999: 2, Max: 3}
	}
	if err := reports.WriteAll(dir, sum); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	stdout, _, err := runCLI(t, ctx, "simcheck", "--out", out, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fast-fail: real run " + dir, "least-inflight", "faulty share %", "sim calibrated"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	cal := readSummary(t, filepath.Join(out, "fast-fail"))
	if cal.CalibratedFrom == nil || cal.CalibratedFrom.From != dir || len(cal.CalibratedFrom.Real) != 2 {
		t.Fatalf("calibrated_from %+v", cal.CalibratedFrom)
	}
	md, err := os.ReadFile(filepath.Join(out, "fast-fail", reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "### Sim vs real") {
		t.Error("the calibrated run's report has no sim vs real section")
	}

	// run --calibrate takes the run's directory too; an uncalibrated
	// summary, or a real engine, is refused.
	simDir := filepath.Join(t.TempDir(), "sim")
	if _, _, err := runCLI(t, ctx, "run", "fast-fail", "--engine", "sim", "--duration", "2s", "--strategies", "least-inflight", "--calibrate", dir, "--out", simDir, "--quiet"); exitCode(err) > 3 {
		t.Fatal(err)
	}
	if s := readSummary(t, simDir); s.CalibratedFrom == nil || s.CalibratedFrom.PreShare != 0.5 {
		t.Errorf("run --calibrate: calibrated_from %+v", s.CalibratedFrom)
	}
	for _, args := range [][]string{
		{"run", "fast-fail", "--engine", "sim", "--calibrate", simDir},
		{"run", "fast-fail", "--engine", "real", "--calibrate", dir},
		{"run", "fast-fail", "--engine", "sim", "--calibrate-pre", "0.3"},
		{"run", "fast-fail", "--engine", "sim", "--calibrate", dir, "--calibrate-pre", "2"},
	} {
		if _, _, err := runCLI(t, ctx, append(args, "--out", filepath.Join(t.TempDir(), "x"), "--quiet")...); exitCode(err) != 2 {
			t.Errorf("%q: exit %d (%v), want 2", args, exitCode(err), err)
		}
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunAbortExits4: lbchaos run of a file whose abort condition trips
// (every instance fails) stops the first strategy within its window plus
// a second, heals its faults, skips the other strategies, writes what
// tripped into summary.json, report.md and the terminal, and exits 4.
func TestRunAbortExits4(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for two seconds")
	}
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := runCLI(t, context.Background(), "run", "testdata/abort-all-failing.yaml",
		"--backends", "process", "--out", out, "--raw=false")
	if got := exitCode(err); got != 4 {
		t.Fatalf("exit code %d, want 4 (%v)\n%s", got, err, stderr)
	}
	if !strings.Contains(err.Error(), "aborted: error_ratio ") || !strings.Contains(err.Error(), "in round-robin at ") ||
		!strings.Contains(err.Error(), "2 strategies not run; results are in "+out) {
		t.Errorf("error %q does not say what tripped and where the results are", err)
	}
	s := readSummary(t, out)
	a := s.Abort
	if a == nil {
		t.Fatal("summary.json has no abort")
	}
	t.Logf("%s; %d results in the window", a.Text(), a.Requests)
	if a.Strategy != "round-robin" || a.Metric != "error_ratio" || a.Op != ">" || a.Threshold != 0.5 || a.WindowS != 2 || a.Value != 1 {
		t.Errorf("abort %+v, want round-robin's error_ratio 1 > 0.5 over 2 s", a)
	}
	if a.AtS < 2 || a.AtS > 3 || !slices.Equal(a.Skipped, []string{"p2c", "least-inflight"}) {
		t.Errorf("tripped at %v s, skipped %q: want within [2, 3] s, p2c and least-inflight", a.AtS, a.Skipped)
	}
	if len(s.Strategies) != 1 || s.Strategies[0].ElapsedS > 3 {
		t.Fatalf("%d strategies measured, want round-robin alone for at most 3 s", len(s.Strategies))
	}
	if !slices.Contains(s.Notes, "round-robin: the abort healed the faults of instances 0, 1, 2, 3.") {
		t.Errorf("notes do not say the faults were healed: %q", s.Notes)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := "ABORTED: " + a.Text()
	if !strings.Contains(string(md), line) {
		t.Errorf("report.md lacks %q", line)
	}
	if !strings.Contains(stdout, line) {
		t.Errorf("the terminal lacks %q:\n%s", line, stdout)
	}
	if !strings.Contains(stderr, "skipped p2c, least-inflight: not run: aborted:") {
		t.Errorf("progress does not name the skipped strategies:\n%s", stderr)
	}
}

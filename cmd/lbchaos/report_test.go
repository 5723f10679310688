package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/reports"
)

// A simulated run of ten strategies through fast-fail: the terminal names
// report.html, numbers only the strategies that ran, and says "virtual
// time"; report.md fits a pull request comment (65536 characters), opens
// on the verdict and the expectations, and keeps every strategy's section
// collapsed.
func TestSimRunReportFitsAComment(t *testing.T) {
	if testing.Short() {
		t.Skip("renders the plots of ten strategies")
	}
	dir := t.TempDir()
	ten := []string{"round-robin", "random", "least-inflight", "p2c", "ewma", "peak-ewma", "least-request",
		"least-inflight+eject(consecutive=5,duration=5s,max_duration=5s)", "least-inflight+eject(consecutive=5,duration=5s)",
		"p2c+eject(consecutive=5,duration=5s)+slowstart(window=5s)"}
	out, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--engine", "sim", "--out", dir,
		"--duration", "5s", "--strategies", strings.Join(ten, ","))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if want := "report: " + filepath.Join(dir, reports.HTMLFile); !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, "virtual time") || strings.Contains(out, "1970") {
		t.Errorf("terminal header of a sim run does not say virtual time:\n%s", out)
	}
	if !strings.Contains(errOut, "[1/10] round-robin") || !strings.Contains(errOut, "[10/10] p2c+eject") {
		t.Errorf("progress not numbered over the ten strategies:\n%s", errOut)
	}

	b, err := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if len(b) > 65536 {
		t.Errorf("report.md is %d bytes, more than a pull request comment takes (65536)", len(b))
	}
	t.Logf("report.md: %d bytes", len(b))
	verdict, exps, table := strings.Index(md, "## Verdict"), strings.Index(md, "## Expectations"), strings.Index(md, "## Comparison of strategies")
	if verdict < 0 || exps < verdict || table < exps {
		t.Errorf("report.md does not open on the verdict, then the expectations, then the comparison (at %d, %d, %d)", verdict, exps, table)
	}
	if n := strings.Count(md, "<details><summary><b>Strategy: "); n != len(ten) {
		t.Errorf("%d collapsed strategy sections, want %d", n, len(ten))
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details> in report.md")
	}
	if strings.Contains(md, "1970") || !strings.Contains(md, "virtual time") {
		t.Error("report.md of a sim run shows the epoch, not virtual time")
	}
	for _, term := range []string{"`least-inflight`: ", "`p2c`: ", "`eject`: ", "`slowstart`: ", "`peak-ewma`: "} {
		if !strings.Contains(md, term) {
			t.Errorf("report.md's glossary lacks %s", term)
		}
	}
	h, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(h), "1970") || strings.Contains(string(h), `class="strategy" id="s-p2c" open`) {
		t.Error("report.html shows the epoch or opens the strategy sections")
	}
}

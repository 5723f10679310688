package main

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lbchaos/lbchaos/reports"
)

// TestRunRepeat runs an experiment three times in virtual time through the
// CLI: each repetition in its own folder with its own seed, the aggregate
// beside them, which compare and junit read.
func TestRunRepeat(t *testing.T) {
	results := t.TempDir()
	_, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--engine", "sim", "--repeat", "3", "--seed", "7",
		"--duration", "3s", "--strategies", "round-robin,p2c", "--results", results, "--quiet")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	latest := filepath.Join(results, "fast-fail", "latest")
	var p2c []float64
	for i, seed := range []uint64{7, 8, 9} {
		s := readSummary(t, filepath.Join(latest, repDir(i+1)))
		if s.Seed != seed || len(s.Strategies) != 2 || !s.ExpectationsAdvisory {
			t.Errorf("rep-%d: seed %d, %d strategies, advisory %v", i+1, s.Seed, len(s.Strategies), s.ExpectationsAdvisory)
		}
		p2c = append(p2c, s.Strategies[1].ErrorRatio)
	}
	if p2c[0] == p2c[1] && p2c[1] == p2c[2] {
		t.Errorf("three seeds gave the same error ratio %g: not three different runs", p2c[0])
	}
	r, single, err := loadRun(latest)
	if err != nil || single != nil {
		t.Fatalf("loadRun: %v (single %v)", err, single != nil)
	}
	if diff := cmp.Diff([]string{"rep-1", "rep-2", "rep-3"}, r.Runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if got, want := r.Strategies[1].Metrics["error_ratio"], reports.NewSpread(p2c); !cmp.Equal(got, want) {
		t.Errorf("p2c error_ratio %+v, want %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(latest, reports.RepeatsMarkdownFile)); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(latest, reports.SummaryFile)); err == nil {
		t.Error("a repeated run wrote a top-level summary.json")
	}

	out, _, err := runCLI(t, context.Background(), "compare", "--fail-on-regression", latest, latest)
	if err != nil || !strings.Contains(out, "3 repetitions, seeds 7..9") || !strings.HasSuffix(out, "none\n") {
		t.Errorf("compare with itself: %v\n%s", err, out)
	}

	junit := filepath.Join(t.TempDir(), "junit.xml")
	if _, _, err := runCLI(t, context.Background(), "junit", "--out", junit, latest, filepath.Join(latest, "rep-1")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc reports.JUnitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 2 || doc.Tests == 0 || doc.Failures != 0 {
		t.Errorf("junit: %d suites, %d tests, %d failures\n%s", len(doc.Suites), doc.Tests, doc.Failures, data)
	}
}

func TestRunRepeatRejectsZero(t *testing.T) {
	_, _, err := runCLI(t, context.Background(), "run", "fast-fail", "--engine", "sim", "--repeat", "0", "--out", t.TempDir())
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "--repeat") {
		t.Errorf("exit %d: %v", exitCode(err), err)
	}
}

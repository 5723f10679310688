package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestRunOutNotEmpty: --out into a directory with files refuses, naming
// the directory and --force, and leaves the files; --force removes the
// previous run's files, keeps anyone else's, and writes the new run.
func TestRunOutNotEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "fast-fail", "--engine", "sim", "--duration", "2s", "--quiet", "--out", dir}
	if _, errOut, err := runCLI(t, context.Background(), append(args, "--strategies", "p2c,random")...); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	mine := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}

	_, _, err := runCLI(t, context.Background(), append(args, "--strategies", "round-robin")...)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--out "+dir+": the directory is not empty") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("run into a non-empty --out: %v; want exit 2 naming the directory and --force", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p2c", "latency.png")); err != nil {
		t.Errorf("the refused run touched the previous one: %v", err)
	}

	if _, errOut, err := runCLI(t, context.Background(), append(args, "--strategies", "round-robin", "--force")...); err != nil {
		t.Fatalf("--force: %v\n%s", err, errOut)
	}
	for _, gone := range []string{"p2c", "random"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--force left the previous run's %s: %v", gone, err)
		}
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
		t.Errorf("--force removed a file lbchaos did not write: %q, %v", b, err)
	}
	if s := readSummary(t, dir); len(s.Strategies) != 1 || s.Strategies[0].Name != "round-robin" {
		t.Errorf("summary after --force: %+v", s.Strategies)
	}
	if _, err := os.Stat(filepath.Join(dir, "round-robin", "latency.png")); err != nil {
		t.Errorf("new run's plots: %v", err)
	}
}

// TestVegetaReadsRawResults builds the vegeta command from the module in
// go.mod and runs its report and plot on a fresh real run's results.
func TestVegetaReadsRawResults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vegeta and runs real load")
	}
	tmp := t.TempDir()
	vegeta := filepath.Join(tmp, "vegeta")
	build := exec.Command("go", "build", "-o", vegeta, "github.com/tsenart/vegeta/v12")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build vegeta: %v\n%s", err, out)
	}
	dir := filepath.Join(tmp, "run")
	if _, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--backends", "process", "--duration", "2s",
		"--rate", "300", "--strategies", "round-robin,least-inflight+eject(consecutive=5,duration=5s)", "--quiet", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	s := readSummary(t, dir)
	validateSummary(t, dir) // a real run's, with the harness's fields
	subs := reports.StrategyDirs([]string{s.Strategies[0].Name, s.Strategies[1].Name})
	for i, st := range s.Strategies {
		results := decompress(t, filepath.Join(dir, subs[i], reports.ResultsFile))
		report := vegetaCmd(t, vegeta, results, "report")
		t.Logf("%s:\n%s", st.Name, report)
		m := regexp.MustCompile(`(?m)^Requests\s+\[total, rate, throughput\]\s+(\d+),`).FindStringSubmatch(report)
		if m == nil {
			t.Fatalf("%s: vegeta report has no request count:\n%s", st.Name, report)
		}
		if n, _ := strconv.ParseInt(m[1], 10, 64); n != st.Requests {
			t.Errorf("%s: vegeta report counts %d requests, summary.json %d", st.Name, n, st.Requests)
		}
		m = regexp.MustCompile(`(?m)^Bytes In\s+\[total, mean\]\s+(\d+),`).FindStringSubmatch(report)
		if m == nil {
			t.Fatalf("%s: vegeta report has no Bytes In:\n%s", st.Name, report)
		}
		if n, _ := strconv.ParseInt(m[1], 10, 64); n <= 0 {
			t.Errorf("%s: Bytes In total %d, want the response bodies' bytes", st.Name, n)
		}
		if !strings.Contains(report, "Status Codes  [code:count]") || !strings.Contains(report, "503:") {
			t.Errorf("%s: vegeta report lacks the status codes with the faulty instance's 503s", st.Name)
		}
		plot := vegetaCmd(t, vegeta, results, "plot", "--title", st.Name)
		// The plot is an HTML page with the results as its data: one
		// series, named after the attack (the strategy), of OK results.
		if !strings.HasPrefix(strings.TrimSpace(plot), "<!doctype html>") || !strings.Contains(plot, st.Name+": OK") {
			t.Errorf("%s: vegeta plot output is not an HTML page with the strategy's series (%d bytes): %.300s", st.Name, len(plot), plot)
		}
		if !regexp.MustCompile(`\[\s*\d+(\.\d+)?\s*,\s*\d+(\.\d+)?`).MatchString(plot) {
			t.Errorf("%s: vegeta plot output has no data points", st.Name)
		}
	}
}

func decompress(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out, err := zr.DecodeAll(b, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// vegetaCmd runs vegeta with args, the results on its standard input, as
// in zstd -dc results.bin.zst | vegeta report.
func vegetaCmd(t *testing.T, vegeta string, results []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(vegeta, args...)
	cmd.Stdin = bytes.NewReader(results)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vegeta %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestSimSummaryMatchesSchema: a fresh simulated run's summary.json
// validates against the shipped schemas/summary.schema.json (a real run's:
// TestVegetaReadsRawResults).
func TestSimSummaryMatchesSchema(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, errOut, err := runCLI(t, context.Background(), "run", "fast-fail", "--engine", "sim", "--duration", "3s", "--quiet", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	validateSummary(t, dir)
	for _, st := range readSummary(t, dir).Strategies {
		if st.TransportOverheadMs != nil {
			t.Errorf("%s: a simulated run has transport_overhead_ms %+v; it measures no transport", st.Name, *st.TransportOverheadMs)
		}
	}
}

// validateSummary validates the summary.json in dir against the shipped
// schemas/summary.schema.json.
func validateSummary(t *testing.T, dir string) {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile("../../schemas/summary.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s/summary.json: %v", dir, err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/sweep"
)

// Every shipped sweep parses, names an experiment that loads, and every
// point of its grid applies to it.
func TestShippedSweeps(t *testing.T) {
	out, _, err := runCLI(t, context.Background(), "list", "sweeps")
	if err != nil {
		t.Fatal(err)
	}
	names := experiments.SweepNames()
	if len(names) < 2 {
		t.Fatalf("shipped sweeps %q", names)
	}
	for _, name := range names {
		if !strings.Contains(out, name+" ") {
			t.Errorf("lbchaos list sweeps lacks %s:\n%s", name, out)
		}
		c, err := (&sweepFlags{engine: "sim", results: t.TempDir()}).config(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, p := range c.Grid.Points() {
			if _, err := c.Grid.Apply(c.Exp, p); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

const sweepExp = `name: tiny
seed: 1
duration: 1s
rate: 100
timeout: 2s
instances: {count: 2, workers: 4, service: {dist: fixed, value: 2ms}}
faults:
  - {instance: 0, fault: {mode: fail, status: 503}}
strategies: [round-robin, p2c]
key_metric: error_ratio
`

func TestSweepCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(file, []byte(sweepExp), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", file}, "give what to vary"},
		{[]string{"sweep", file, "--vary", "rate=1..2"}, "FROM..TO:N"},
		{[]string{"sweep", file, "--vary", "rate=1,2", "--engine", "fast"}, "--engine: want sim or real"},
		{[]string{"sweep", file, "--vary", "rate=1,2", "--slo", "p99 < 3"}, `unknown metric "p99"`},
		{[]string{"sweep", file, "--vary", "p2c+eject(consecutive={1,2})", "--strategies", "p2c"}, "leave --strategies out"},
		{[]string{"sweep", file, "--vary", "rate=1,2", "--resume", dir}, "not a sweep's folder"},
		{[]string{"sweep", "no-such-sweep"}, "unknown experiment"},
		{[]string{"sweep", file, "--vary", "rate=1,2", "--confirm-points", "3"}, `--confirm-points: "3" is no point of the sweep (1 to 2)`},
		{[]string{"sweep", file, "--vary", "rate=1,2", "--engine", "real", "--confirm", "1"}, "--confirm: confirms a simulated sweep"},
	} {
		_, _, err := runCLI(t, context.Background(), c.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (exit %d), want exit 2 and %q", c.args, err, exitCode(err), c.want)
		}
	}
	// A sweep file next to its experiment, run in sim with one point
	// confirmed on process backends.
	sf := filepath.Join(dir, "tiny-sweep.yaml")
	if err := os.WriteFile(sf, []byte("experiment: tiny.yaml\nvary:\n  - rate=50..150:3\n  - faults=on,off\nslo: error_ratio < 1%\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sweep")
	stdout, _, err := runCLI(t, context.Background(), "sweep", sf, "--out", out, "--confirm", "1")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, sweep.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var res sweep.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 6 || res.Engine != "sim" || len(res.Knees) != 4 {
		t.Fatalf("%d points, engine %s, knees %+v", len(res.Points), res.Engine, res.Knees)
	}
	// The best point by error ratio is one without the fault, confirmed
	// real: no errors there either.
	real := 0
	for _, p := range res.Points {
		for _, f := range p.Strategies {
			if f.Real != nil {
				real++
				if p.Params["faults"] != "off" || f.Real["error_ratio"] != 0 || f.Real["requests"] == 0 {
					t.Errorf("confirmed point %d (%v): real %v", p.ID, p.Params, f.Real)
				}
			}
		}
	}
	if real != 2 {
		t.Errorf("%d strategies confirmed, want the best point's 2", real)
	}
	for _, f := range []string{sweep.CSVFile, sweep.MarkdownFile, sweep.PlotFile("error_ratio")} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(stdout, "real error %") || !strings.Contains(stdout, "`round-robin` (faults=on): over the bound already at the lowest rate") {
		t.Errorf("stdout:\n%s", stdout)
	}
	// Resuming a complete sweep runs nothing again.
	_, stderr, err := runCLI(t, context.Background(), "sweep", sf, "--resume", out)
	if err != nil || strings.Contains(stderr, " ran ") || strings.Count(stderr, " kept ") != 6 {
		t.Errorf("resume: %v\n%s", err, stderr)
	}
}

// writeFiles writes name: content into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Values that would change nothing, points the experiment refuses and a
// resume with other arguments are usage errors, before any folder.
func TestSweepUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tiny, calm := filepath.Join(dir, "tiny.yaml"), filepath.Join(dir, "calm.yaml")
	writeFiles(t, dir, map[string]string{
		"tiny.yaml": sweepExp,
		"calm.yaml": strings.Replace(strings.Replace(sweepExp, "name: tiny", "name: calm", 1), "faults:\n  - {instance: 0, fault: {mode: fail, status: 503}}\n", "", 1),
	})
	done := filepath.Join(dir, "done")
	if _, _, err := runCLI(t, context.Background(), "sweep", tiny, "--vary", "rate=50,100", "--out", done, "--quiet"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "never")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{tiny, "--vary", "instances=0,2"}, `--vary instances=0,2: "0": want a whole number >= 1`},
		{[]string{tiny, "--vary", "duration=0s"}, `--vary duration=0s: "0s": want a duration > 0`},
		{[]string{tiny, "--vary", "cross_zone_latency=1ms,2ms"}, "--vary cross_zone_latency=1ms,2ms: tiny has no zones"},
		{[]string{calm, "--vary", "faults=on,off"}, "--vary faults=on,off: calm has no faults"},
		{[]string{tiny, "--vary", "seed=1,2", "--repeat", "2"}, "--vary seed=1,2: --repeat 2 runs each point with seeds"},
		{[]string{tiny, "--vary", "rate=1000,1e3"}, `values "1000" and "1e3" are the same value`},
		{[]string{tiny, "--vary", "replicas=2,65"}, "point 2 (replicas=65)"},
		{[]string{tiny, "--vary", "rate=50,200", "--resume", done}, `--resume ` + done + `: that sweep ran with --vary "rate=50,100", not "rate=50,200"`},
		{[]string{tiny, "--vary", "rate=50,100", "--repeat", "2", "--resume", done}, "--repeat 1, not 2"},
		{[]string{calm, "--vary", "rate=50,100", "--resume", done}, "experiment tiny, not calm"},
	} {
		args := append([]string{"sweep"}, c.args...)
		if !slices.Contains(args, "--resume") {
			args = append(args, "--out", out)
		}
		_, _, err := runCLI(t, context.Background(), args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (exit %d), want exit 2 and %q", args, err, exitCode(err), c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%q made %s: %v", args, out, err)
		}
	}
}

// The experiment's warnings are printed once, not once a point; an
// interrupted sweep exits 130.
func TestSweepWarningsAndInterrupt(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "other.yaml") // says name: tiny
	writeFiles(t, dir, map[string]string{"other.yaml": sweepExp})
	_, stderr, err := runCLI(t, context.Background(), "sweep", file, "--vary", "rate=50,100,150", "--out", filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr, "lbchaos: warning:"); n != 1 || !strings.Contains(stderr, `name: the file says "tiny"`) {
		t.Errorf("%d warnings:\n%s", n, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "b")
	_, _, err = runCLI(t, ctx, "sweep", file, "--vary", "rate=50,100", "--out", out)
	if exitCode(err) != 130 || !strings.Contains(err.Error(), "--resume "+out) {
		t.Errorf("interrupted: %v (exit %d), want 130", err, exitCode(err))
	}
	if _, err := os.Stat(filepath.Join(out, sweep.JSONFile)); err != nil {
		t.Errorf("an interrupted sweep has no %s: %v", sweep.JSONFile, err)
	}
}

// cancelOn is a log that cancels once it has seen n lines holding s.
type cancelOn struct {
	s      string
	n      int
	seen   int
	cancel func()
	buf    strings.Builder
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if c.seen += strings.Count(string(p), c.s); c.seen >= c.n {
		c.cancel()
	}
	return len(p), nil
}

// An interrupt during --confirm keeps the points confirmed before it in
// the sweep's files, and exits 130.
func TestSweepConfirmInterrupted(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.yaml")
	writeFiles(t, dir, map[string]string{"tiny.yaml": sweepExp})
	f := &sweepFlags{engine: "sim", out: filepath.Join(dir, "sweep"), varies: []string{"rate=50,100"}}
	cfg, err := f.config(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sweep.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &cancelOn{s: "confirming point", n: 2, cancel: cancel}
	err = confirmSweep(ctx, cfg, res, []int{2, 1}, log)
	if !errors.Is(err, harness.ErrInterrupted) || exitCode(sweepExit(err, cfg.Dir)) != 130 {
		t.Fatalf("confirm interrupted: %v (exit %d)\n%s", err, exitCode(sweepExit(err, cfg.Dir)), log.buf.String())
	}
	data, err := os.ReadFile(filepath.Join(cfg.Dir, sweep.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var back sweep.Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Points[1].Strategies[0].Real == nil || back.Points[0].Strategies[0].Real != nil {
		t.Errorf("sweep.json after an interrupted confirm: point 2 real %v, point 1 real %v", back.Points[1].Strategies[0].Real, back.Points[0].Strategies[0].Real)
	}
}

// A sweep file is one whose first key is experiment, however the YAML
// starts.
func TestIsSweepRef(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		body string
		want bool
	}{
		"plain.yaml":   {"experiment: fast-fail\nvary: [rate=1,2]\n", true},
		"comment.yaml": {"# a sweep\n---\nexperiment: fast-fail\n", true},
		"flow.yaml":    {"{experiment: fast-fail, vary: [rate=1,2]}\n", true},
		"exp.yaml":     {"name: x\nexperiment: y\n", false},
		"text.yaml":    {"description: \"experiment: not a key\"\nexperiment: y\n", false},
		"list.yml":     {"- experiment: x\n", false},
	} {
		path := filepath.Join(dir, name)
		writeFiles(t, dir, map[string]string{name: c.body})
		if got := experiments.IsSweepRef(path); got != c.want {
			t.Errorf("IsSweepRef(%s) = %v, want %v", name, got, c.want)
		}
	}
	if _, _, shipped, err := experiments.LoadSweep("eject-tuning"); err != nil || !shipped {
		t.Errorf("LoadSweep(eject-tuning): shipped %v, %v", shipped, err)
	}
	if _, _, shipped, err := experiments.LoadSweep(filepath.Join(dir, "plain.yaml")); err != nil || shipped {
		t.Errorf("LoadSweep(a file): shipped %v, %v", shipped, err)
	}
}

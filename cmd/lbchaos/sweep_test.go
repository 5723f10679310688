package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
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

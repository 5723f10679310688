package main

import (
	"bytes"
	"encoding/xml"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

// The CI workflows (.github/workflows) only call these scripts; the tests
// below run the very same scripts against a freshly built lbchaos, so that
// the gate can be trusted without running GitHub Actions.
const (
	pushScript    = "../../.github/scripts/push.sh"
	nightlyScript = "../../.github/scripts/nightly.sh"
)

// runScript runs a CI script with env added to this process's environment
// (CI and GITHUB_* variables of a surrounding CI removed) and returns its
// exit code and combined output.
func runScript(t *testing.T, script string, env []string, args ...string) (int, string) {
	t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{abs}, args...)...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GITHUB_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return 0, out.String()
}

func readJUnit(t *testing.T, path string) reports.JUnitSuites {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc reports.JUnitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// TestPushScript runs the push check as the workflow does: every shipped
// experiment in sim, a 2 s real run on process backends, JUnit XML and the
// job summary.
func TestPushScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment in sim and a real smoke run")
	}
	bin := buildStatic(t)
	t.Run("all pass", func(t *testing.T) {
		out := t.TempDir()
		summary := filepath.Join(t.TempDir(), "step-summary.md")
		code, log := runScript(t, pushScript, []string{"LBCHAOS=" + bin, "GITHUB_STEP_SUMMARY=" + summary}, out)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		var names []string // those the simulator models, as lbchaos list --engine sim shows
		for _, name := range experiments.Names() {
			if e, err := experiments.Load(name); err != nil {
				t.Fatal(err)
			} else if sim.Measures(e) {
				names = append(names, name)
			}
		}
		for _, name := range names {
			if !strings.Contains(log, "push: sim "+name+": ok") {
				t.Errorf("no sim run of %s:\n%s", name, log)
			}
		}
		doc := readJUnit(t, filepath.Join(out, "junit.xml"))
		if len(doc.Suites) != len(names)+1 || doc.Failures != 0 || doc.Tests < 2*len(names) {
			t.Errorf("junit: %d suites for %d experiments + smoke, %d tests, %d failures", len(doc.Suites), len(names), doc.Tests, doc.Failures)
		}
		smoke := readSummary(t, filepath.Join(out, "smoke", "fast-fail"))
		if smoke.Engine != "real" || smoke.Backends != "process" || len(smoke.Strategies) != 2 || smoke.Strategies[0].Requests == 0 {
			t.Errorf("smoke run: engine %s, backends %s, %d strategies", smoke.Engine, smoke.Backends, len(smoke.Strategies))
		}
		if raw, _ := filepath.Glob(filepath.Join(out, "smoke", "fast-fail", "results-*")); len(raw) > 0 {
			t.Errorf("the smoke run kept raw data: %v", raw)
		}
		step, err := os.ReadFile(summary)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# lbchaos: every experiment in sim, and a real smoke run", "| fast-fail | real, process backends",
			"<details><summary>smoke/fast-fail: report.md</summary>", "# lbchaos report: fast-fail", "<details><summary>sim/zone-jitter: report.md</summary>"} {
			if !bytes.Contains(step, []byte(want)) {
				t.Errorf("job summary lacks %q", want)
			}
		}
		if len(step) > 1000000 {
			t.Errorf("job summary of %d bytes is over GitHub's limit", len(step))
		}
	})
	t.Run("a failed expectation fails the check", func(t *testing.T) {
		data, err := os.ReadFile("../../experiments/baseline.yaml")
		if err != nil {
			t.Fatal(err)
		}
		wrong := strings.Replace(string(data), "name: baseline", "name: wrong", 1) + "\n  - {strategy: p2c, p50_ms: \"< 1\"}\n"
		file := filepath.Join(t.TempDir(), "wrong.yaml")
		if err := os.WriteFile(file, []byte(wrong), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		code, log := runScript(t, pushScript, []string{"LBCHAOS=" + bin, "EXPERIMENTS=" + file}, out)
		if code != 1 || !strings.Contains(log, "::error title=sim wrong::expectations FAILED") {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		doc := readJUnit(t, filepath.Join(out, "junit.xml"))
		var failed []string
		for _, s := range doc.Suites {
			for _, c := range s.Cases {
				if c.Failure != nil {
					failed = append(failed, c.Classname+" / "+c.Name)
				}
			}
		}
		if len(failed) != 1 || failed[0] != "wrong / p2c: p50_ms < 1" {
			t.Errorf("failed test cases: %q", failed)
		}
	})
}

// TestNightlyScript runs the nightly gate on one experiment in sim with
// three repetitions against a previous night's results made for the case:
// none, equal, better in one strategy, and with a strategy the new run
// lacks.
func TestNightlyScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the nightly script")
	}
	bin := buildStatic(t)
	env := func(strategies string, extra ...string) []string {
		return append([]string{"LBCHAOS=" + bin, "EXPERIMENTS=fast-fail", "REPEAT=3",
			"RUN_ARGS=--engine sim --duration 3s --strategies " + strategies}, extra...)
	}
	const all = "round-robin,least-inflight,p2c"

	first := t.TempDir()
	code, log := runScript(t, nightlyScript, env(all), filepath.Join(t.TempDir(), "none"), first)
	if code != 0 || !strings.Contains(log, "nightly: fast-fail: run ok; gate: no previous result") {
		t.Fatalf("first night: exit %d:\n%s", code, log)
	}
	baseline := filepath.Join(first, "baseline")
	kept := map[string]bool{}
	err := filepath.WalkDir(baseline, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			kept[d.Name()] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range kept {
		switch name {
		case reports.RepeatsFile, reports.RepeatsMarkdownFile, reports.SummaryFile, reports.MarkdownFile:
		default:
			t.Errorf("the baseline keeps %s: only numbers and Markdown belong in it", name)
		}
	}
	if _, err := os.Stat(filepath.Join(baseline, "fast-fail", "rep-3", reports.SummaryFile)); err != nil {
		t.Errorf("baseline: %v", err)
	}

	t.Run("equal", func(t *testing.T) {
		out := t.TempDir()
		summary := filepath.Join(t.TempDir(), "step-summary.md")
		code, log := runScript(t, nightlyScript, env(all, "GITHUB_STEP_SUMMARY="+summary), baseline, out)
		if code != 0 || !strings.Contains(log, "gate: no regression") {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		step, err := os.ReadFile(summary)
		if err != nil || !bytes.Contains(step, []byte("| fast-fail | ok | no regression |")) || !bytes.Contains(step, []byte("# fast-fail: 3 repetitions")) {
			t.Errorf("job summary (%v):\n%s", err, step)
		}
	})

	// The previous night's p2c failed half as many requests, in every
	// repetition.
	better := t.TempDir()
	if err := os.CopyFS(better, os.DirFS(baseline)); err != nil {
		t.Fatal(err)
	}
	rewriteRepeated(t, filepath.Join(better, "fast-fail", reports.RepeatsFile), func(r *reports.Repeated) {
		for _, st := range r.Strategies {
			if st.Name == "p2c" {
				sp := st.Metrics["error_ratio"]
				for i := range sp.Values {
					sp.Values[i] /= 2
				}
				st.Metrics["error_ratio"] = reports.NewSpread(sp.Values)
			}
		}
	})
	t.Run("a strategy was better", func(t *testing.T) {
		code, log := runScript(t, nightlyScript, env(all), better, t.TempDir())
		if code != 1 || !strings.Contains(log, "::error title=nightly fast-fail regression::REGRESSION fast-fail p2c error_ratio ") {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		if strings.Contains(log, "REGRESSION fast-fail round-robin") || !strings.Contains(log, "FAILED: 1 significant regressions, 0 strategies missing") {
			t.Errorf("only p2c changed:\n%s", log)
		}
	})
	t.Run("accepted with GATE=0", func(t *testing.T) {
		code, log := runScript(t, nightlyScript, env(all, "GATE=0"), better, t.TempDir())
		if code != 0 || !strings.Contains(log, "(accepted: GATE=0)") {
			t.Fatalf("exit %d:\n%s", code, log)
		}
	})
	t.Run("a strategy missing from the new run", func(t *testing.T) {
		code, log := runScript(t, nightlyScript, env("round-robin,least-inflight"), baseline, t.TempDir())
		if code != 1 || !strings.Contains(log, "MISSING fast-fail p2c in A, not in B") {
			t.Fatalf("exit %d:\n%s", code, log)
		}
	})
}

func rewriteRepeated(t *testing.T, path string, edit func(*reports.Repeated)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reports.ReadRepeatedJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	edit(r)
	var buf bytes.Buffer
	if err := reports.WriteRepeatedJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBaselineRunScript runs the nightly's baseline lookup against a
// stand-in for gh that answers the REST API's list of artifacts (as
// documented: newest first, with workflow_run and expired) and applies the
// script's --jq filter with jq, as gh does.
func TestBaselineRunScript(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("no jq to stand in for gh's --jq")
	}
	dir := t.TempDir()
	response := `{"total_count": 4, "artifacts": [
	  {"id": 4, "name": "lbchaos-baseline-fast-fail", "expired": false, "created_at": "2026-11-30T03:40:00Z", "workflow_run": {"id": 104, "head_branch": "feature"}},
	  {"id": 3, "name": "lbchaos-baseline-fast-fail", "expired": false, "created_at": "2026-11-29T03:40:00Z", "workflow_run": {"id": 103, "head_branch": "main"}},
	  {"id": 2, "name": "lbchaos-baseline-fast-fail", "expired": true, "created_at": "2026-11-30T03:50:00Z", "workflow_run": {"id": 102, "head_branch": "main"}},
	  {"id": 1, "name": "lbchaos-baseline-fast-fail", "expired": false, "created_at": "2026-11-28T03:40:00Z", "workflow_run": {"id": 101, "head_branch": "main"}}
	]}`
	if err := os.WriteFile(filepath.Join(dir, "artifacts.json"), []byte(response), 0o644); err != nil {
		t.Fatal(err)
	}
	// gh api -X GET PATH -f k=v ... --jq FILTER: records the call, answers
	// with the response through the filter.
	gh := `#!/usr/bin/env bash
echo "$*" >"` + filepath.Join(dir, "call") + `"
while [ $# -gt 0 ]; do
	if [ "$1" = --jq ]; then exec "` + jq + `" -r "$2" "` + filepath.Join(dir, "artifacts.json") + `"; fi
	shift
done
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
	code, out := runScript(t, "../../.github/scripts/baseline-run.sh", []string{path, "GITHUB_REPOSITORY=lbchaos/lbchaos"}, "lbchaos-baseline-fast-fail", "main")
	if code != 0 || out != "103\n" {
		t.Errorf("exit %d, printed %q; want the newest unexpired run on main, 103", code, out)
	}
	call, err := os.ReadFile(filepath.Join(dir, "call"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "api -X GET repos/lbchaos/lbchaos/actions/artifacts -f name=lbchaos-baseline-fast-fail -f per_page=100 --jq"; !strings.HasPrefix(string(call), want) {
		t.Errorf("gh called as %q, want %q ...", call, want)
	}
	code, out = runScript(t, "../../.github/scripts/baseline-run.sh", []string{path, "GITHUB_REPOSITORY=lbchaos/lbchaos"}, "lbchaos-baseline-fast-fail", "release")
	if code != 0 || out != "" {
		t.Errorf("no artifact on the branch: exit %d, printed %q; want nothing", code, out)
	}
}

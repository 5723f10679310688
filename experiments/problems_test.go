package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestErrorsTeach: a file's mistakes come back in one pass, each with its
// line, the path the user wrote and, for a near miss, the name meant.
func TestErrorsTeach(t *testing.T) {
	const base = "duration: 10s\nrate: 100\ninstances: {count: 3, service: {dist: fixed, value: 10ms}}\nstrategies: [round-robin]\n"
	for _, tc := range []struct {
		name, src string
		want      []string // lines of the message after "t.yaml: "
	}{
		{"five mistakes, one pass", `duration: 10s
rate: fast
instanses: 3
instances:
  count: 6.5
  workers: "many"
  service: {dist: fixed, value: 10ms}
faults:
  - instances: [0, 2.7]
    fault: {mode: fail}
strategies: [round-robin]
`, []string{
			"5 problems:",
			`  line 2: rate: want requests per second or {stages: [{duration: 10s, target: 2000}, ...]}, got "fast"`,
			`  line 3: unknown field "instanses"; did you mean "instances"? (see docs/experiments.md for its keys)`,
			"  line 5: instances.count: 6.5 is not a whole number; it would be cut to 6",
			`  line 6: instances.workers: want a whole number, got "many"`,
			"  line 9: faults[0].instances[1]: 2.7 is not a whole number; it would be cut to 2",
		}},
		// Wrong result 3: each of these ran as 6, 8 and 2.
		{"fractions", "duration: 10s\nrate: 100\ninstances: {count: 6.5, workers: 8.9, service: {dist: fixed, value: 10ms}}\nfaults: [{instance: 2.7, fault: {mode: fail}}]\nstrategies: [round-robin]\n",
			[]string{"3 problems:",
				"  line 3: instances.count: 6.5 is not a whole number; it would be cut to 6",
				"  line 3: instances.workers: 8.9 is not a whole number; it would be cut to 8",
				"  line 4: faults[0].instance: 2.7 is not a whole number; it would be cut to 2"}},
		{"near-miss strategies", strings.Replace(base, "[round-robin]", "[least_inflight, P2C, round-robin]", 1),
			[]string{"2 problems:",
				`  line 4: strategies[0]: unknown strategy "least_inflight"; did you mean "least-inflight"? (lbchaos list strategies shows them all)`,
				`  line 4: strategies[1]: unknown strategy "P2C"; did you mean "p2c"? (lbchaos list strategies shows them all)`}},
		{"tab", "rate: 100\ninstances:\n\tcount: 3\n", []string{"line 3: a tab; YAML indents with spaces only"}},
		{"text for a number", strings.Replace(base, "rate: 100", "rate: 100\nreplicas: three", 1),
			[]string{`line 3: replicas: want a whole number, got "three"`}},
		{"missing required", "duration: 10s\ninstances: {count: 3, service: {dist: fixed, value: 10ms}}\n",
			[]string{"2 problems:", "  rate: is required: requests per second, e.g. rate: 1000", "  strategies: is required: e.g. strategies: [round-robin, least-inflight]"}},
		{"checks after the structure, all at once", strings.Replace(base, "duration: 10s", "duration: 10s\narrival: burst\ntimeout: -1s", 1) +
			"faults: [{instances: [0, 7], fault: {mode: fail}}]\nkey_metric: p50_ms\n",
			[]string{"4 problems:",
				`  line 2: arrival: must be "poisson" or "constant", got "burst"`,
				"  line 3: timeout: must be > 0, got -1s",
				"  line 7: faults[0].instances[1]: 7 is out of range: instances are 0..2",
				"  line 8: key_metric: unknown metric \"p50_ms\" (one of bad_ratio, error_ratio, slow_ratio, timeout_ratio, faulty_share, p99_ms, p999_ms, max_avg_load, max_jump_rps, share_stddev, error_tail_s, cross_zone_share, worst_zone_error_ratio)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.src)
			}
			want := "t.yaml: " + strings.Join(tc.want, "\n")
			if err.Error() != want {
				t.Errorf("error\n%s\nwant\n%s", err, want)
			}
		})
	}
}

// TestNameFromTheFile: name: may be left out, and a copied file runs
// under its own name, saying so.
func TestNameFromTheFile(t *testing.T) {
	dir := t.TempDir()
	src, err := shipped.ReadFile("fast-fail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, "my-case.yaml")
	if err := os.WriteFile(copied, src, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := LoadFile(copied)
	if err != nil {
		t.Fatalf("a copy of fast-fail.yaml does not load: %v", err)
	}
	if e.Name != "my-case" || len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0], `name: the file says "fast-fail"; it runs as "my-case"`) {
		t.Errorf("copied file: name %q, warnings %q", e.Name, e.Warnings)
	}
	noName := filepath.Join(dir, "nameless.yml")
	if err := os.WriteFile(noName, []byte("rate: 10\nduration: 1s\ninstances: {count: 1, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := LoadFile(noName); err != nil || e.Name != "nameless" || len(e.Warnings) != 0 {
		t.Errorf("file without name: %v, %+v", err, e)
	}
}

// TestShortenedRunWarns: wrong result 4. --duration 5s on herd, whose
// fault starts at 10 s, ran with "faults: none" and exit 0, and --rate
// moved its rate stages, without a word.
func TestShortenedRunWarns(t *testing.T) {
	herd, err := Load("herd")
	if err != nil {
		t.Fatal(err)
	}
	short, err := herd.Apply(Overrides{Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--duration 5s: faults[0] (slow on instance 0) is not applied: the run ends before it starts at 10s; give --duration over 10s to keep it",
		"--duration 5s: no fault of the experiment is applied; the run measures the instances without one",
	}
	if strings.Join(short.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(short.Warnings, "\n"), strings.Join(want, "\n"))
	}
	if long, _ := herd.Apply(Overrides{Duration: 20 * time.Second}); len(long.Warnings) != 0 {
		t.Errorf("a run that keeps its fault warns: %q", long.Warnings)
	}

	burst, err := Load("burst")
	if err != nil {
		t.Fatal(err)
	}
	if burst.Profile == nil {
		t.Skip("burst has no rate stages")
	}
	scaled, err := burst.Apply(Overrides{Rate: burst.Rate / 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(scaled.Warnings) != 1 || !strings.Contains(scaled.Warnings[0], "every stage's target is scaled by 0.5") {
		t.Errorf("--rate on rate stages: warnings %q", scaled.Warnings)
	}
	cut, err := burst.Apply(Overrides{Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cut.Warnings, "\n"), "and later ones do not run") {
		t.Errorf("--duration cutting rate stages: warnings %q", cut.Warnings)
	}
}

package experiments

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

func TestAbortConditions(t *testing.T) {
	e, err := Parse("t.yaml", []byte(twoStrategies+`abort:
  - {error_ratio: "> 0.5", window: 9s}
  - {timeout_ratio: ">= 1%", window: 2s}
  - window: 500ms
    p99_ms: "> 250"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Abort{
		{"error_ratio", ">", 0.5, 9 * time.Second},
		{"timeout_ratio", ">=", 0.01, 2 * time.Second},
		{"p99_ms", ">", 250, 500 * time.Millisecond},
	}
	if d := cmp.Diff(want, e.Abort); d != "" {
		t.Errorf("abort (-want +got):\n%s", d)
	}
	if got := e.Abort[0].String(); got != "error_ratio > 0.5 over 9s" {
		t.Errorf("String() = %q", got)
	}
	if !e.Abort[0].Holds(0.97) || e.Abort[0].Holds(0.5) {
		t.Error("error_ratio > 0.5: Holds(0.97) must be true and Holds(0.5) false")
	}
	c, err := e.Apply(Overrides{Duration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Abort) != 3 {
		t.Errorf("Apply kept %d abort conditions, want 3", len(c.Abort))
	}
}

func TestBadAbortConditions(t *testing.T) {
	for _, tc := range []struct {
		name, abort string
		want        []string // substrings, each a field path and why
	}{
		{"not a list", `abort: {error_ratio: "> 0.5"}`, []string{"abort: want a list"}},
		{"no window", `abort: [{error_ratio: "> 0.5"}]`, []string{"abort[0].window: is required"}},
		{"zero window", `abort: [{error_ratio: "> 0.5", window: 0s}]`, []string{"abort[0].window: must be > 0"}},
		{"bad window", `abort: [{error_ratio: "> 0.5", window: soon}]`, []string{`abort[0].window: want a duration like "30s"`}},
		{"window past the run", `abort: [{error_ratio: "> 0.5", window: 11s}]`, []string{"abort[0].window: 11s is not shorter than the run (duration 10s)"}},
		// Both engines judge only before the end: a window as long as the
		// run would never be judged.
		{"window as long as the run", `abort: [{error_ratio: "> 0.5", window: 10s}]`, []string{"abort[0].window: 10s is not shorter than the run (duration 10s)"}},
		{"whole-attack metric", `abort: [{faulty_share: "> 0.5", window: 1s}]`, []string{"abort[0].faulty_share: is a metric of a whole attack", "error_ratio, timeout_ratio, slow_ratio"}},
		{"unknown metric", `abort: [{eror_ratio: "> 0.5", window: 1s}]`, []string{"abort[0].eror_ratio: unknown metric"}},
		{"no metric", `abort: [{window: 1s}]`, []string{"abort[0]: names no metric"}},
		{"two metrics", `abort: [{error_ratio: "> 0.5", p99_ms: "> 9", window: 1s}]`, []string{"abort[0]: names two metrics"}},
		{"bad threshold", `abort: [{error_ratio: "about half", window: 1s}]`, []string{`abort[0].error_ratio: want "OP NUMBER"`}},
		{"ratio out of range", `abort: [{error_ratio: "> 50", window: 1s}]`, []string{`abort[0].error_ratio: "> 50"`}},
		{"per strategy", `abort: [{strategy: round-robin, error_ratio: "> 0.5", window: 1s}]`, []string{"abort[0].strategy: abort applies to every strategy"}},
		{"every entry's problem", "abort:\n  - {error_ratio: \"> 0.5\"}\n  - {max_avg_load: \"> 2\", window: 1s}\n",
			[]string{"abort[0].window: is required", "abort[1].max_avg_load:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(twoStrategies+tc.abort+"\n"))
			if err == nil {
				t.Fatalf("Parse accepted %s", tc.abort)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestAbortOverriddenDuration: a shorter run than an abort window is
// refused after overrides too, naming the field.
func TestAbortOverriddenDuration(t *testing.T) {
	e, err := Parse("t.yaml", []byte(twoStrategies+"abort: [{error_ratio: \"> 0.5\", window: 5s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(Overrides{Duration: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "abort[0].window: 5s is not shorter than the run (duration 2s)") {
		t.Errorf("Apply(duration 2s) = %v, want the window refused", err)
	}
}

// TestAbortSchema: the experiment schema takes what the loader takes of
// abort, and refuses an entry without a window or with a key no metric
// of abort has.
func TestAbortSchema(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile(experimentSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		abort string
		ok    bool
	}{
		{`[{error_ratio: "> 0.5", window: 9s}]`, true},
		{`[{p99_ms: "> 250", window: 500ms}, {timeout_ratio: "> 1%", window: 2s}]`, true},
		{`[{error_ratio: "> 0.5"}]`, false},
		{`[{faulty_share: "> 0.5", window: 1s}]`, false},
		{`[{error_ratio: "> 0.5", window: 10}]`, false},
	} {
		src := twoStrategies + "abort: " + tc.abort + "\n"
		var doc any
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		serr := sch.Validate(doc)
		_, lerr := Parse("t.yaml", []byte(src))
		if (serr == nil) != tc.ok || (lerr == nil) != tc.ok {
			t.Errorf("abort: %s: schema says %v, loader %v; want ok=%v", tc.abort, serr, lerr, tc.ok)
		}
	}
}

package experiments

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// twoStrategies is a valid file with two strategies, one with commas in
// its spec; expectations are appended to it.
const twoStrategies = `
name: t
duration: 10s
rate: 100
instances: {count: 3, service: {dist: fixed, value: 10ms}}
strategies: [round-robin, "p2c+eject(consecutive=5,duration=5s)"]
`

func TestExpectations(t *testing.T) {
	e, err := Parse("t.yaml", []byte(twoStrategies+`key_metric: error_ratio
expect:
  - {strategy: round-robin, error_ratio: "< 0.005"}
  - {strategy: "p2c+eject(consecutive=5,duration=5s)", slow_ratio: "> 0.05"}
  - strategy: round-robin
    p99_ms: "<=100"
  - {strategy: round-robin, ejections: ">= 3"}
  - {strategy: round-robin, bad_ratio: "< 1e-3"}
  - {strategy: round-robin, timeout_ratio: "<= 0.5%"}
  - {strategy: round-robin, faulty_share: "> 100%"}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Expectation{
		{"round-robin", "error_ratio", "<", 0.005},
		{"p2c+eject(consecutive=5,duration=5s)", "slow_ratio", ">", 0.05},
		{"round-robin", "p99_ms", "<=", 100},
		{"round-robin", "ejections", ">=", 3},
		{"round-robin", "bad_ratio", "<", 0.001},
		{"round-robin", "timeout_ratio", "<=", 0.005},
		{"round-robin", "faulty_share", ">", 1},
	}
	if d := cmp.Diff(want, e.Expect); d != "" {
		t.Errorf("Expect (-want +got):\n%s", d)
	}
	if e.KeyMetric != "error_ratio" {
		t.Errorf("KeyMetric %q", e.KeyMetric)
	}
	if got := e.Expect[2].String(); got != "p99_ms <= 100" {
		t.Errorf("String() = %q", got)
	}
}

func TestNoExpectations(t *testing.T) {
	for _, add := range []string{"", "expect:\n", "expect: []\n"} {
		e, err := Parse("t.yaml", []byte(twoStrategies+add))
		if err != nil {
			t.Fatalf("%q: %v", add, err)
		}
		if len(e.Expect) != 0 || e.KeyMetric != DefaultKeyMetric {
			t.Errorf("%q: expect %v, key metric %q", add, e.Expect, e.KeyMetric)
		}
	}
}

func TestBadExpectations(t *testing.T) {
	const (
		metricList   = "achieved_rate, affinity, attempts_per_request, bad_ratio, cross_zone_share, duplicate_executions, ejections, end_goodput_ratio, error_ratio, error_tail_s, faulty_share, max_avg_load, max_jump_rps, max_ms, max_utilization, mean_ms, newcomer_share, p50_ms, p50_ok_ms, p90_ms, p999_ms, p99_failed_ms, p99_ms, p99_ok_ms, requests, share_stddev, slow_ratio, success_ratio, tier_amplification, timeout_ratio, worst_zone_error_ratio"
		strategyList = `"round-robin", "p2c+eject(consecutive=5,duration=5s)"`
	)
	tests := []struct {
		name string
		add  string // appended to twoStrategies
		want string // the whole error
	}{
		{"not an OP NUMBER", `expect: [{strategy: round-robin, error_ratio: "< 0.005"}, {strategy: round-robin, slow_ratio: "big"}]`,
			`t.yaml: line 7: expect[1].slow_ratio: want "OP NUMBER" like "> 5%", got "big"`},
		{"number without op", `expect: [{strategy: round-robin, error_ratio: 0.005}]`,
			`t.yaml: line 7: expect[0].error_ratio: want "OP NUMBER" like "> 5%", got "0.005"`},
		{"op without number", `expect: [{strategy: round-robin, p99_ms: "<"}]`,
			`t.yaml: line 7: expect[0].p99_ms: want "OP NUMBER" like "< 100", got "<"`},
		{"unsupported op", `expect: [{strategy: round-robin, ejections: "== 3"}]`,
			`t.yaml: line 7: expect[0].ejections: want "OP NUMBER" like ">= 1", got "== 3"`},
		{"not finite", `expect: [{strategy: round-robin, p99_ms: "< Inf"}]`,
			`t.yaml: line 7: expect[0].p99_ms: want "OP NUMBER" like "< 100", got "< Inf"`},
		{"condition is a list", `expect: [{strategy: round-robin, error_ratio: ["<", 1]}]`,
			`t.yaml: line 7: expect[0].error_ratio: want "OP NUMBER" like "> 5%", got a sequence`},
		{"unknown metric", `expect: [{strategy: round-robin, errors: "< 1"}]`,
			`t.yaml: line 7: expect[0].errors: unknown metric (known: ` + metricList + `)`},
		{"unknown strategy", `expect: [{strategy: p2c, error_ratio: "< 0.01"}]`,
			`t.yaml: line 7: expect[0].strategy: "p2c" is not one of the file's strategies (` + strategyList + `)`},
		{"strategy spelled differently", `expect: [{strategy: "p2c+eject(consecutive=5, duration=5s)", error_ratio: "< 0.01"}]`,
			`t.yaml: expect[0].strategy: "p2c+eject(consecutive=5, duration=5s)" is not one of the file's strategies (` + strategyList + `)`},
		{"missing strategy", `expect: [{error_ratio: "< 0.01"}]`,
			`t.yaml: expect[0].strategy: is required: one of the file's strategies (` + strategyList + `)`},
		{"empty strategy", `expect: [{strategy: , error_ratio: "< 0.01"}]`,
			`t.yaml: line 7: expect[0].strategy: want one of the file's strategies (` + strategyList + `)`},
		{"strategy twice", `expect: [{strategy: round-robin, error_ratio: "< 0.01", strategy: round-robin}]`,
			`t.yaml: line 7: expect[0].strategy: is given twice`},
		{"two metrics", `expect: [{strategy: round-robin, error_ratio: "< 0.01", slow_ratio: "< 0.01"}]`,
			`t.yaml: line 7: expect[0]: names two metrics, error_ratio and slow_ratio; write one entry per metric`},
		{"no metric", `expect: [{strategy: round-robin}]`,
			`t.yaml: expect[0]: names no metric; add one of ` + metricList},
		{"entry not a mapping", `expect: [round-robin]`,
			`t.yaml: line 7: expect[0]: want a mapping like {strategy: round-robin, error_ratio: "< 0.01"}`},
		{"expect not a list", `expect: {strategy: round-robin, error_ratio: "< 0.01"}`,
			`t.yaml: line 7: expect: want a list like [{strategy: round-robin, error_ratio: "< 0.01"}], got a mapping`},
		{"expect a number", `expect: 3`,
			`t.yaml: expect: want a list like [{strategy: round-robin, error_ratio: "< 0.01"}], got a value "3"`},
		{"unquoted > in a flow mapping", `expect: [{strategy: round-robin, error_ratio: > 0.2}]`,
			`t.yaml: line 7: error_ratio: the condition > 0.2 must be quoted, as in error_ratio: "> 0.2" (unquoted, YAML reads > as the start of a folded block)`},
		{"unquoted >= in a block mapping", "expect:\n  - strategy: round-robin\n    ejections: >= 1",
			`t.yaml: line 9: ejections: the condition >= 1 must be quoted, as in ejections: ">= 1" (unquoted, YAML reads > as the start of a folded block)`},
		// The terminal shows SLOW%>500MS 12.41: "< 5" on a ratio would
		// pass against 0.1241 in every run.
		{"ratio above 1", `expect: [{strategy: round-robin, slow_ratio: "< 5"}]`,
			`t.yaml: line 7: expect[0].slow_ratio: "< 5": slow_ratio is a ratio between 0 and 1, and 5 is outside it; write "< 5%" for 5 percent, or "< 0.05"`},
		{"negative ratio", `expect: [{strategy: round-robin, error_ratio: "> -0.1"}]`,
			`t.yaml: expect[0].error_ratio: "> -0.1": error_ratio is a ratio between 0 and 1; a negative one holds for every run or none`},
		{"percentage above 100", `expect: [{strategy: round-robin, error_ratio: "< 150%"}]`,
			`t.yaml: expect[0].error_ratio: "< 150%": error_ratio is a ratio, so a percentage must be within 0% and 100%`},
		{"percentage on milliseconds", `expect: [{strategy: round-robin, p99_ms: "< 5%"}]`,
			`t.yaml: expect[0].p99_ms: "< 5%": p99_ms is not a ratio and takes no %; write a number like "< 100"`},
		{"bad key metric", `key_metric: p50_ms`,
			`t.yaml: line 7: key_metric: unknown metric "p50_ms" (one of bad_ratio, error_ratio, slow_ratio, timeout_ratio, faulty_share, p99_ms, p999_ms, max_avg_load, max_jump_rps, share_stddev, error_tail_s, cross_zone_share, worst_zone_error_ratio)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := twoStrategies + tt.add + "\n"
			_, err := Parse("t.yaml", []byte(body))
			if err == nil {
				t.Fatalf("accepted:\n%s", body)
			}
			if msg(err, tt.want) != tt.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tt.want)
			}
		})
	}
}

func TestValidateExpectations(t *testing.T) {
	base, err := Parse("t.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		x    Expectation
		want string
	}{
		{"unknown metric", Expectation{"round-robin", "p95_ms", "<", 1}, `expect[0]: unknown metric "p95_ms"`},
		{"unknown op", Expectation{"round-robin", "p99_ms", "=", 1}, `expect[0].p99_ms: want "OP NUMBER" like "< 100", got "= 1"`},
		{"NaN", Expectation{"round-robin", "error_ratio", "<", math.NaN()}, `expect[0].error_ratio: want "OP NUMBER" like "> 5%", got "< NaN"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := *base
			e.Expect = []Expectation{tt.x}
			if err := e.Validate(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %s...", err, tt.want)
			}
		})
	}
}

func TestExpectationHolds(t *testing.T) {
	tests := []struct {
		op        string
		below, at bool // holds for 0.5 and for 1, against 1
		above     bool // holds for 2
	}{
		{"<", true, false, false},
		{"<=", true, true, false},
		{">", false, false, true},
		{">=", false, true, true},
		{"=", false, false, false},
	}
	for _, tt := range tests {
		x := Expectation{Metric: "p99_ms", Op: tt.op, Value: 1}
		got := [3]bool{x.Holds(0.5), x.Holds(1), x.Holds(2)}
		if want := [3]bool{tt.below, tt.at, tt.above}; got != want {
			t.Errorf("%s: holds for 0.5, 1, 2: %v, want %v", tt.op, got, want)
		}
		if x.Holds(math.NaN()) {
			t.Errorf("%s: holds for NaN", tt.op)
		}
	}
}

func TestApplyKeepsExpectations(t *testing.T) {
	e, err := Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Apply(Overrides{Duration: 5 * time.Second, Strategies: []string{"p2c"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(e.Expect, got.Expect); d != "" || len(got.Expect) == 0 {
		t.Errorf("expectations changed by Apply (-before +after):\n%s", d)
	}
	if got.KeyMetric != e.KeyMetric {
		t.Errorf("key metric %q, want %q", got.KeyMetric, e.KeyMetric)
	}
	got.Expect[0].Value = 42
	if e.Expect[0].Value == 42 {
		t.Error("the copy shares its expectations with the original")
	}
}

// Every shipped experiment sets a key metric and states at least one
// expectation. Whether they hold is checked in package harness.
func TestShippedExpectations(t *testing.T) {
	for _, name := range Names() {
		e, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(e.Raw), "\nkey_metric:") {
			t.Errorf("%s: no key_metric", name)
		}
		if len(e.Expect) == 0 {
			t.Errorf("%s: no expectations", name)
		}
	}
}

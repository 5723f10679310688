package harness_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/sim"
)

// TestRunAbortSkipsTheRest: an abort condition that trips in the second
// strategy ends the run with an *Aborted error: the strategies after it
// are skipped with the reason (a proxy the simulator leaves out anyway is
// not counted among them), the summary says what tripped, and the
// expectations on strategies not run are missing, not failed.
func TestRunAbortSkipsTheRest(t *testing.T) {
	exp := runtest.MustExperiment(t, "abort-driver", `
duration: 10s
rate: 500
instances: {count: 3, service: {dist: fixed, value: 5ms}}
faults: [{instances: [0, 1], at: 0s, fault: {mode: fail, status: 503}}]
strategies: ["round-robin+eject(consecutive=3,duration=30s)", round-robin, "nginx:round_robin", p2c]
abort: [{error_ratio: "> 60%", window: 1s}]
expect:
  - {strategy: p2c, error_ratio: "< 0.1"}
`)
	var log strings.Builder
	sum, err := harness.Run(context.Background(), exp, harness.Options{Engine: sim.Engine{}, Log: &log})
	var aborted *harness.Aborted
	if !errors.As(err, &aborted) {
		t.Fatalf("err = %v, want *harness.Aborted", err)
	}
	if want := "aborted: error_ratio 0.668 > 0.6 over 1s in round-robin at 1.0s; 1 strategy not run"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	a := sum.Abort
	if a == nil || a.Strategy != "round-robin" || a.AtS != 1 || !slices.Equal(a.Skipped, []string{"p2c"}) {
		t.Fatalf("abort %+v, want round-robin's at 1 s, p2c skipped", a)
	}
	if len(sum.Strategies) != 2 || !sum.Strategies[1].Partial || sum.Strategies[1].ElapsedS != 1 || sum.Strategies[0].Partial {
		t.Errorf("strategies %d, want the ejecting one whole and round-robin partial at 1 s", len(sum.Strategies))
	}
	if sum.Partial {
		t.Error("an aborted run is not marked interrupted")
	}
	if !slices.Contains(sum.Notes, "p2c: not run: aborted: error_ratio 0.668 > 0.6 over 1s in round-robin at 1.0s") {
		t.Errorf("notes %q lack p2c's skip", sum.Notes)
	}
	if !strings.Contains(log.String(), "skipped p2c: not run: aborted:") {
		t.Errorf("log lacks the skip:\n%s", log.String())
	}
	if len(sum.Expectations) != 1 || !sum.Expectations[0].Missing {
		t.Errorf("expectations %+v, want p2c's missing", sum.Expectations)
	}
}

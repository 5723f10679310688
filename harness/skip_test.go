package harness

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/sim"
)

// skipping is a scripted engine that leaves strategy p2c out.
type skipping struct{ scripted }

func (*skipping) Skip(_ *experiments.Experiment, name string) string {
	if name == "p2c" {
		return "p2c: not run by this engine."
	}
	return ""
}

// Strategies an engine skips are noted before anything runs and left out
// of the numbering: "[i/n]" counts, and the progress carries, only the
// strategies that run.
func TestRunNumbersOnlyTheStrategiesThatRun(t *testing.T) {
	exp := runtest.MustExperiment(t, "driver", strings.Replace(driverExp, "a-strategy", "round-robin", 1))
	var log bytes.Buffer
	var positions [][2]int
	eng := &skipping{scripted{info: engine.Info{Engine: "e", Backends: "b"}}}
	eng.measure = func(_ context.Context, job engine.Job) (*engine.Measurement, error) {
		pos, of := job.Position()
		positions = append(positions, [2]int{pos, of})
		return complete(job.Name()), nil
	}
	sum, err := Run(context.Background(), exp, Options{Engine: eng, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eng.calls, []string{"round-robin", "random"}) {
		t.Errorf("measured %v, want round-robin and random (p2c skipped before measuring)", eng.calls)
	}
	if want := [][2]int{{1, 2}, {2, 2}}; !slices.Equal(positions, want) {
		t.Errorf("job positions %v, want %v", positions, want)
	}
	out := log.String()
	for _, want := range []string{"skipped p2c: not run by this engine.", "[1/2] round-robin:", "[2/2] random:"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "/3]") {
		t.Errorf("log counts the skipped strategy:\n%s", out)
	}
	if !slices.Contains(sum.Notes, "p2c: not run by this engine.") || len(sum.Strategies) != 2 {
		t.Errorf("notes %q, %d strategies", sum.Notes, len(sum.Strategies))
	}
}

// The simulator skips real proxies; a sim run of fast-fail numbers its
// six built-in strategies [1/6]..[6/6], not [1/11]..[6/11].
func TestSimRunNumbersBuiltInStrategies(t *testing.T) {
	exp, err := experiments.Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	if exp, err = exp.Apply(experiments.Overrides{Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sum, err := Run(context.Background(), exp, Options{Engine: sim.Engine{}, Log: &log, Advisory: true})
	if err != nil {
		t.Fatal(err)
	}
	n := len(sum.Strategies)
	if n == 0 || n == len(exp.Strategies) {
		t.Fatalf("%d of %d strategies simulated; fast-fail should have proxies the simulator skips", n, len(exp.Strategies))
	}
	out := log.String()
	for i := 1; i <= n; i++ {
		if want := "[" + strconv.Itoa(i) + "/" + strconv.Itoa(n) + "] "; !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "/"+strconv.Itoa(len(exp.Strategies))+"]") {
		t.Errorf("log counts skipped strategies:\n%s", out)
	}
}

// A run in which the engine leaves every strategy out is an error naming
// why, not an empty table with exit status 0: whether the engine skips
// them before measuring (the simulator and a real proxy) or while
// measuring (Measurement.Skipped).
func TestRunWithEveryStrategyLeftOutFails(t *testing.T) {
	exp, err := experiments.Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	if exp, err = exp.Apply(experiments.Overrides{Duration: time.Second, Strategies: []string{"nginx:round_robin"}}); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), exp, Options{Engine: sim.Engine{}})
	if sum != nil || err == nil || !strings.Contains(err.Error(), "no strategy was measured") ||
		!strings.Contains(err.Error(), "nginx:round_robin: a real proxy runs only with the real engine") {
		t.Errorf("sim of a proxy alone: summary %v, error %v; want no summary and an error naming the strategy left out", sum != nil, err)
	}

	exp = runtest.MustExperiment(t, "driver", strings.Replace(driverExp, "a-strategy", "round-robin", 1))
	eng := &scripted{info: engine.Info{Engine: "e", Backends: "b"}}
	eng.measure = func(_ context.Context, job engine.Job) (*engine.Measurement, error) {
		return &engine.Measurement{Skipped: job.Name() + ": not here."}, nil
	}
	sum, err = Run(context.Background(), exp, Options{Engine: eng})
	if sum != nil || err == nil || !strings.Contains(err.Error(), "no strategy was measured") || !strings.Contains(err.Error(), "p2c") || !strings.Contains(err.Error(), "not here.") {
		t.Errorf("every strategy skipped while measuring: summary %v, error %v", sum != nil, err)
	}
}

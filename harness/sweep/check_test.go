package sweep

import (
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// A joining instance's warm-up and a fault of the file's own.
const warmupExp = `
seed: 1
duration: 20s
rate: 100
instances:
  workers: 1
  service: {dist: fixed, value: 10ms}
  groups:
    - {count: 2}
    - {count: 1, join_at: 5s, warmup: {duration: 5s, factor: 5}}
faults:
  - {instance: 0, fault: {mode: slow, factor: 10}}
strategies: [round-robin]
`

// faults=off drops the file's faults and keeps the warm-ups, which are the
// instances' own.
func TestFaultsOffKeepsWarmups(t *testing.T) {
	exp := runtest.MustExperiment(t, "warmup", warmupExp)
	g, err := ParseGrid([]string{"faults=on,off"})
	if err != nil {
		t.Fatal(err)
	}
	exps, err := g.Check(exp, 1)
	if err != nil {
		t.Fatal(err)
	}
	count := func(e *experiments.Experiment) (warm, other int) {
		for _, f := range e.Faults {
			if f.Warmup {
				warm++
			} else {
				other++
			}
		}
		return warm, other
	}
	if w, o := count(exps[0]); w != 1 || o != 1 {
		t.Errorf("faults=on: %d warm-ups, %d other faults; want 1 and 1", w, o)
	}
	if w, o := count(exps[1]); w != 1 || o != 0 {
		t.Errorf("faults=off: %d warm-ups, %d other faults; want 1 and 0", w, o)
	}
	if w, o := count(exp); w != 1 || o != 1 {
		t.Errorf("the experiment itself changed: %d warm-ups, %d other faults", w, o)
	}
}

// A dimension that changes nothing, and a seed dimension with repeat > 1,
// are refused, naming the --vary.
func TestGridCheck(t *testing.T) {
	plain := runtest.MustExperiment(t, "capacity", capacityExp)
	warmOnly := runtest.MustExperiment(t, "warm", strings.Replace(warmupExp, "faults:\n  - {instance: 0, fault: {mode: slow, factor: 10}}\n", "", 1))
	for _, c := range []struct {
		exp    *experiments.Experiment
		varies []string
		repeat int
		want   string
	}{
		{plain, []string{"cross_zone_latency=0s,5ms"}, 1, "--vary cross_zone_latency=0s,5ms: capacity has no zones (zones:), so cross_zone_latency changes nothing"},
		{warmOnly, []string{"faults=on,off"}, 1, "--vary faults=on,off: warm has no faults (besides instances' warm-ups)"},
		{plain, []string{"rate=50,100", "seed=1,2"}, 3, "--vary seed=1,2: --repeat 3 runs each point with seeds SEED, SEED+1"},
		{plain, []string{"rate=50,100", "replicas=65"}, 1, "point 1 (rate=50 replicas=65)"},
	} {
		g, err := ParseGrid(c.varies)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Check(c.exp, c.repeat); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q, repeat %d: %v, want %q", c.varies, c.repeat, err, c.want)
		}
	}
	g, err := ParseGrid([]string{"rate=50,100", "seed=1,2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Check(plain, 1); err != nil {
		t.Errorf("a seed dimension without --repeat: %v", err)
	}
}

package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
)

// generatorCases are shipped experiments, shortened, that between them
// exercise every part of the merge: faults and errors (fast-fail),
// ejection events (the +eject strategies), request keys and affinity
// (hot-key), requests no instance took (all-failing: every instance
// ejected) and multi-level health (zone-jitter).
var generatorCases = []struct {
	name       string
	duration   time.Duration
	rate       float64
	strategies []string
}{
	{"fast-fail", 6 * time.Second, 2000, []string{"round-robin", "p2c", "least-inflight+eject(consecutive=5,duration=5s,max_duration=5s)"}},
	{"hot-key", 4 * time.Second, 1500, []string{"ring-hash", "bounded-load(factor=1.25)"}},
	{"all-failing", 16 * time.Second, 500, []string{"p2c+eject(consecutive=5,duration=30s,max=1,success_rate=false)"}},
	{"zone-jitter", 8 * time.Second, 2000, []string{"p2c+health(max_ejected=0.3)"}},
}

func generatorExperiment(t *testing.T, name string, duration time.Duration, rate float64, strats []string, generators, replicas int) *experiments.Experiment {
	t.Helper()
	exp, err := experiments.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if exp, err = exp.Apply(experiments.Overrides{Duration: duration, Rate: rate, Strategies: strats}); err != nil {
		t.Fatal(err)
	}
	exp.Generators, exp.Replicas = generators, replicas
	if err := exp.Validate(); err != nil {
		t.Fatal(err)
	}
	return exp
}

// measureStrategy simulates one strategy and returns its measurement as
// JSON and the final collector's histograms as an HdrHistogram log.
func measureStrategy(t *testing.T, exp *experiments.Experiment, name string, stream bool) (measurement, hlog []byte) {
	t.Helper()
	var log bytes.Buffer
	hooks := simHooks{stream: stream, hdrLog: true, final: func(c *engine.Collector) {
		if err := c.WriteHDRLog(&log, name, Epoch, Epoch.Add(exp.Duration)); err != nil {
			t.Fatal(err)
		}
	}}
	m, err := simStrategy(context.Background(), exp, name, hooks)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b, log.Bytes()
}

// TestGeneratorsMergeExactly proves the merge of generators' streams exact:
// N generators, each measuring its share (request k mod N) through its own
// collector whose seconds and totals are encoded, decoded and merged, give
// the same measurement and the same histograms as one process with N
// replicas (request k to replica k mod N) and the same seed — also for
// N = 1, where the one generator's results still go through the stream.
func TestGeneratorsMergeExactly(t *testing.T) {
	for _, tc := range generatorCases {
		for _, n := range []int{1, 2, 4} {
			for _, name := range tc.strategies {
				t.Run(fmt.Sprintf("%s/%d/%s", tc.name, n, name), func(t *testing.T) {
					one := generatorExperiment(t, tc.name, tc.duration, tc.rate, tc.strategies, 1, n)
					spread := generatorExperiment(t, tc.name, tc.duration, tc.rate, tc.strategies, n, 1)
					wantM, wantH := measureStrategy(t, one, name, false)
					gotM, gotH := measureStrategy(t, spread, name, true)
					if diff := cmp.Diff(string(wantM), string(gotM)); diff != "" {
						t.Errorf("measurement of %d generators differs from %d replicas (-replicas +generators):\n%s", n, n, diff)
					}
					if !bytes.Equal(wantH, gotH) {
						t.Errorf("merged histograms of %d generators differ from %d replicas' (%d and %d bytes of HdrHistogram log)", n, n, len(gotH), len(wantH))
					}
				})
			}
		}
	}
}

// TestGeneratorsSummaryIdentical runs whole experiments through the driver:
// generators N gives a byte-identical summary.json to replicas N, but for
// the field recording the generators; and 2 generators of 2 replicas give
// the summary of 4 replicas.
func TestGeneratorsSummaryIdentical(t *testing.T) {
	layouts := []struct{ generators, replicas, single int }{{2, 1, 2}, {4, 1, 4}, {2, 2, 4}}
	for _, tc := range generatorCases {
		for _, l := range layouts {
			t.Run(fmt.Sprintf("%s/%dx%d", tc.name, l.generators, l.replicas), func(t *testing.T) {
				want := spreadSummaryJSON(t, generatorExperiment(t, tc.name, tc.duration, tc.rate, tc.strategies, 1, l.single))
				got := spreadSummaryJSON(t, generatorExperiment(t, tc.name, tc.duration, tc.rate, tc.strategies, l.generators, l.replicas))
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("summary.json differs (-replicas %d +generators %d × replicas %d):\n%s", l.single, l.generators, l.replicas, diff)
				}
			})
		}
	}
}

func spreadSummaryJSON(t *testing.T, exp *experiments.Experiment) []byte {
	t.Helper()
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if exp.Generators > 1 && sum.Generators != exp.Generators {
		t.Errorf("summary generators = %d, want %d", sum.Generators, exp.Generators)
	}
	sum.Generators = 0
	return []byte(summaryJSON(t, sum))
}

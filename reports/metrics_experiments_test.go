package reports_test

import (
	"fmt"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// TestShippedExperimentMetrics checks that the key metric and every
// expectation of each shipped experiment name a metric of the table, the
// key metric one that may rank a verdict.
func TestShippedExperimentMetrics(t *testing.T) {
	names := experiments.Names()
	if len(names) == 0 {
		t.Fatal("no shipped experiments")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			e, err := experiments.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := reports.LookupMetric(e.KeyMetric); !ok || !m.Key {
				t.Errorf("key_metric %q: found %v, key %v", e.KeyMetric, ok, m.Key)
			}
			for i, x := range e.Expect {
				if _, ok := reports.LookupMetric(x.Metric); !ok {
					t.Errorf("expect[%d]: metric %q is not in the table", i, x.Metric)
				}
			}
		})
	}
}

func ExampleLookupMetric() {
	m, ok := reports.LookupMetric("p99_ms")
	fmt.Println(ok, m.Kind, m.Unit(), m.Better, m.Key)
	fmt.Println(m.Format(2013.4), "·", m.Head, "·", m.Label)
	// Output:
	// true milliseconds ms lower is better true
	// 2013 ms · p99 ms · p99 latency
}

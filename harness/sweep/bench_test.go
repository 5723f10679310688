package sweep

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/sim"
)

// BenchmarkSweep runs fast-fail (its five simulated strategies, 5 s each)
// at 8 rates, the points in parallel up to the cores and then one at a
// time, in alternating rounds: ms/point of each, and parallel's speed-up
// over the serial peer measured in the same run.
func BenchmarkSweep(b *testing.B) {
	exp, err := experiments.Load("fast-fail")
	if err != nil {
		b.Fatal(err)
	}
	if exp, err = exp.Apply(experiments.Overrides{Duration: 5 * time.Second}); err != nil {
		b.Fatal(err)
	}
	g, err := ParseGrid([]string{"rate=1000..8000:8"})
	if err != nil {
		b.Fatal(err)
	}
	run := func(par int) time.Duration {
		begin := time.Now()
		c := Config{Exp: exp, Grid: g, Engine: func() engine.Engine { return sim.Engine{} }, EngineName: "sim", Dir: b.TempDir(), Parallel: par}
		if _, err := Run(context.Background(), c); err != nil {
			b.Fatal(err)
		}
		return time.Since(begin)
	}
	var par, ser time.Duration
	for range b.N {
		par += run(0)
		ser += run(1)
	}
	points := float64(b.N * g.Size())
	b.ReportMetric(float64(par.Milliseconds())/points, "ms/point")
	b.ReportMetric(float64(ser.Milliseconds())/points, "serial-ms/point")
	b.ReportMetric(float64(ser)/float64(par), "speedup")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "cpus")
}

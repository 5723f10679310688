package live

import (
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/metrics"
)

// exportMetrics exports a's strategy to the engine's metrics (Options.Metrics)
// while it is measured, over instances: every outcome a's collector records,
// whether the result loop adds it or a proxy's access log attributes it
// later, and the load's requests in flight and target rate. It returns
// what marks the strategy over, to call once it is measured. Without
// metrics, or for a distributed run's coordinator (whose collector merges
// its generators' histograms, not outcomes), it does nothing.
func (e *Engine) exportMetrics(a *attack, instances int) (end func()) {
	x := e.opts.Metrics
	if x == nil || a.load == nil || a.coll == nil {
		return func() {}
	}
	exp, ld, sched := a.job.Exp, a.load, a.sched
	s := x.Begin(metrics.Run{Experiment: exp.Name, Strategy: a.job.Name(), Strategies: exp.Strategies, Instances: instances},
		metrics.Live{
			InFlight: ld.InFlight,
			RateTarget: func() float64 {
				// armed is stored after start is set, and cleared once
				// the load has ended: reading start after it is safe.
				if !a.armed.Load() {
					return 0
				}
				if el := time.Since(a.start); el < exp.Duration {
					return sched.Rate(el)
				}
				return 0
			},
		})
	a.coll.Observe(func(o engine.Outcome, n int64) { s.Add(o.Instance, outcome(o), o.Latency, n) })
	return s.End
}

// outcome is how o ended, as the summary counts it.
func outcome(o engine.Outcome) metrics.Outcome {
	switch {
	case o.Success:
		return metrics.OK
	case o.Timeout:
		return metrics.Timeout
	}
	return metrics.Error
}

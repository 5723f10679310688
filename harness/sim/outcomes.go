package sim

import (
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
)

// outcomeRuns hands the requests' outcomes to the generators' collectors
// in runs: each instance's latest run of equal outcomes (with zones, one
// run per instance and client zone) is counted here and added to its
// collector at once (Collector.AddN) when an outcome that differs ends it,
// or before the collector sweeps or finishes. Outcomes are equal when the
// collector keeps the same of them: the same instance and generator,
// second sent (the collector's buckets are seconds), latency, success,
// timeout, key and client zone. Between two sweeps the order of adds does
// not change what a collector holds, so the summary is the one adding
// every outcome at once gives. With a fixed service time most requests to
// an instance take exactly that time, and a second's worth of them costs
// the collector one add instead of hundreds.
type outcomeRuns struct {
	runs []outcomeRun // by generator, then client zone, then instance
	n    int          // instances
	z    int          // client zones; 1 without zones
}

type outcomeRun struct {
	o     engine.Outcome
	sec   time.Duration // o.SentAt / time.Second
	count int64         // 0: no run
}

// newOutcomeRuns returns the runs of generators over instances, with
// zones client zones (0 without zones).
func newOutcomeRuns(generators, instances, zones int) outcomeRuns {
	z := max(1, zones)
	return outcomeRuns{runs: make([]outcomeRun, generators*z*instances), n: instances, z: z}
}

// add counts outcome o of generator src, whose collector is coll.
func (r *outcomeRuns) add(src int32, coll *engine.Collector, o *engine.Outcome) {
	if uint(o.Instance) >= uint(r.n) || uint(o.ClientZone) >= uint(r.z) {
		coll.Add(*o)
		return
	}
	run := &r.runs[(int(src)*r.z+int(o.ClientZone))*r.n+o.Instance]
	sec := o.SentAt / time.Second
	if run.count > 0 && sameOutcome(&run.o, o) && run.sec == sec {
		run.count++
		return
	}
	if run.count > 0 {
		coll.AddN(run.o, run.count)
	}
	run.o, run.sec, run.count = *o, sec, 1
}

// sameOutcome reports whether a and b, of the same instance and
// generator and sent in the same second, are collected alike.
func sameOutcome(a, b *engine.Outcome) bool {
	return a.Latency == b.Latency && a.Success == b.Success && a.Timeout == b.Timeout &&
		a.HasKey == b.HasKey && a.Key == b.Key && a.ClientZone == b.ClientZone
}

// flush adds every run to its generator's collector.
func (r *outcomeRuns) flush(gens []simGenerator) {
	for i := range r.runs {
		run := &r.runs[i]
		if run.count > 0 {
			gens[i/(r.n*r.z)].coll.AddN(run.o, run.count)
			run.count = 0
		}
	}
}

package sim

import (
	"bytes"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/strategies"
)

// simGenerator is one load generator of a simulated run. With
// `generators: N` the simulation splits its load as a distributed real
// run does: request k is generator k mod N's, sent through that
// generator's balancers (engine.GeneratorBalancers) and measured by its own
// collector, whose seconds and totals go through a generator's stream
// (engine.StreamWriter, in memory) to the engine.Merger that a real
// coordinator uses. The instances are one, shared by every generator, as a
// real fleet is. Since N generators of R replicas are a single process's
// N×R replicas spread, the merged summary is the one `replicas: N×R` gives.
type simGenerator struct {
	coll   *engine.Collector
	sent   int64
	lbs    []*strategies.Balancer
	events *engine.EventLog     // the generator's own, when streamed
	stream *engine.StreamWriter // nil: measured in place, not streamed
	buf    *bytes.Buffer        // the stream
}

// newGenerators builds the generators and their balancers (s.lbs, indexed
// as a single process's replicas); events is the log of an unstreamed run.
func (s *sim) newGenerators(exp *experiments.Experiment, name string, stream bool, events *engine.EventLog) error {
	n := max(1, exp.Generators)
	newColl := func() *engine.Collector { return newCollector(exp, len(s.insts), s.hooks.hdrLog) }
	if n == 1 && !stream {
		lbs, err := engine.NewBalancers(exp, name, &s.clock, events)
		if err != nil {
			return err
		}
		s.lbs, s.gens = lbs, []simGenerator{{coll: newColl(), lbs: lbs}}
		return nil
	}
	reps := max(1, exp.Replicas)
	s.gens = make([]simGenerator, n)
	s.lbs = make([]*strategies.Balancer, n*reps)
	for g := range s.gens {
		gen := &s.gens[g]
		gen.events = engine.NewEventLog(Epoch)
		lbs, err := engine.GeneratorBalancers(exp, name, &s.clock, g, n, gen.events)
		if err != nil {
			return err
		}
		for r, lb := range lbs {
			s.lbs[n*r+g] = lb
		}
		gen.lbs, gen.coll, gen.buf = lbs, newColl(), new(bytes.Buffer)
		gen.stream = engine.NewStreamWriter(gen.buf, engine.StreamHeader{
			Generator: g, Generators: n, Replicas: reps, Strategy: name,
			Instances: len(s.insts), Buckets: gen.coll.Buckets(), Start: Epoch.UnixNano(),
		})
		// A write error sticks in the writer and ends the run at End.
		gen.coll.EmitBuckets(func(b int, hists, ok []*hdrhistogram.PackedHistogram) { _ = gen.stream.Bucket(b, hists, ok) })
	}
	return nil
}

// measure finishes the generators' collectors and returns the strategy's
// measurement: the one collector's, or the generators' streams merged.
func (s *sim) measure(exp *experiments.Experiment, name string, elapsed time.Duration, interrupted bool) (*engine.Measurement, error) {
	s.outcomes.flush(s.gens)
	if len(s.gens) == 1 && s.gens[0].stream == nil {
		g := &s.gens[0]
		g.coll.Finish()
		if s.hooks.final != nil {
			s.hooks.final(g.coll)
		}
		m := &engine.Measurement{
			Strategy:     g.coll.Strategy(name, exp.FaultyInstances()),
			Sent:         g.sent,
			Scheduled:    uint64(g.sent), // the simulated generator never falls behind
			Elapsed:      elapsed,
			Interrupted:  interrupted,
			Ejections:    engine.Ejections(s.lbs),
			Retry:        engine.PolicyStats(s.lbs),
			Aborted:      g.coll.Aborted(),
			Unattributed: g.coll.Unattributed(),
		}
		if s.pol != nil && s.pol.tiers != nil {
			engine.FillTiers(exp, &m.Strategy, engine.TierRetryStats(s.pol.tiers.lbs))
		}
		return m, nil
	}
	coll := newCollector(exp, len(s.insts), s.hooks.hdrLog)
	merged := engine.NewMerger(coll, len(s.gens))
	for i := range s.gens {
		g := &s.gens[i]
		g.coll.Finish()
		res := engine.GeneratorResult{Sent: g.sent, Scheduled: uint64(g.sent), Elapsed: elapsed, Interrupted: interrupted, Ejections: engine.Ejections(g.lbs),
			Retry: engine.PolicyStats(g.lbs)}
		if err := g.stream.End(g.coll, g.events, res); err != nil {
			return nil, fmt.Errorf("generator %d: %w", i, err)
		}
		if err := merged.Read(i, g.buf, nil); err != nil {
			return nil, fmt.Errorf("generator %d: %w", i, err)
		}
	}
	m, err := merged.Measurement(name, exp.FaultyInstances())
	if err == nil && s.hooks.final != nil {
		s.hooks.final(coll)
	}
	return m, err
}

// newCollector returns a collector for a simulated run of exp over n
// instances. It keeps no HdrHistogram log unless hdrLog: only the real
// engine writes one (with its raw results), and encoding every second's
// histograms would cost the simulator more than simulating the requests.
func newCollector(exp *experiments.Experiment, n int, hdrLog bool) *engine.Collector {
	c := engine.NewCollector(n, exp.Duration, exp.Timeout, exp.SlowThreshold)
	c.SetZones(exp)
	if !hdrLog {
		c.NoHDRLog()
	}
	return c
}

package engine

import (
	"fmt"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// AddTierAttempt records an attempt that an instance of a tier sent to
// an instance of the next tier (a downstream call, retries and hedges
// each one): at its instance alone. The client's requests, flow,
// timeline and shares count only what the client itself sent.
func (c *Collector) AddTierAttempt(a Attempt) {
	if a.Instance < 0 || a.Instance >= c.instances {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	in := &c.inst[a.Instance]
	in.requests++
	if a.Cancelled {
		if a.Instance < len(c.flow.cancelled) {
			c.flow.cancelled[a.Instance]++
		}
		return
	}
	us := micros(a.Latency)
	in.hist.record(us, 1)
	if a.Success {
		in.histOK.record(us, 1)
	} else {
		in.errors++
		in.histFailed.record(us, 1)
	}
	if a.Timeout {
		in.timeouts++
	}
	if a.Timeout || a.Latency > c.slow {
		in.slowReqs++
	}
}

// FillTiers gives a tiered experiment's strategy summary its tiers (see
// reports.Strategy.Tiers) from its instances' counts, and makes its
// shares what the report reads them as: an instance of the first tier's
// share is of the client's attempts, as is faulty_share (of the first
// tier's faulty instances), and a lower tier instance's share is of its
// own tier's requests. retry, when not nil, gives tier i's callers'
// policy counts (nil for none).
func FillTiers(exp *experiments.Experiment, st *reports.Strategy, retry func(tier int) *reports.RetryStats) {
	if len(exp.Tiers) == 0 {
		return
	}
	st.Tiers = make([]reports.Tier, len(exp.Tiers))
	var edgeFaulty, edge int64
	for ti, t := range exp.Tiers {
		tier := reports.Tier{Name: t.Name, Instances: make([]int, 0, t.Count)}
		for id := t.First; id < t.First+t.Count && id < len(st.Instances); id++ {
			in := &st.Instances[id]
			tier.Instances = append(tier.Instances, id)
			tier.RequestsReceived += in.Requests
			tier.Errors += in.Errors
			if ti == 0 {
				edge += in.Requests
				if in.Faulty {
					edgeFaulty += in.Requests
				}
			}
		}
		for _, id := range tier.Instances {
			st.Instances[id].Share = ratio(st.Instances[id].Requests, tier.RequestsReceived)
		}
		tier.PerClientRequest = ratio(tier.RequestsReceived, st.Requests)
		tier.ErrorRatio = ratio(tier.Errors, tier.RequestsReceived)
		if retry != nil && t.Calls > 0 {
			tier.Retry = retry(ti)
		}
		st.Tiers[ti] = tier
	}
	st.FaultyShare = ratio(edgeFaulty, edge)
}

// TierBalancer builds the balancer through which instance id, of tier
// tier (which has a downstream), calls the next tier: the strategy of
// the tier's hop of name (experiments.HopStrategies), over the next
// tier's instances (its endpoints 0..Count-1 are instances First..), seeded
// by the strategy and the instance. Both engines build it here, so that a
// tier's callers pick alike in each.
func TierBalancer(exp *experiments.Experiment, name string, tier, id int, clock strategies.Clock) (*strategies.Balancer, error) {
	hops := experiments.HopStrategies(name, len(exp.Tiers))
	if hops == nil || tier+1 >= len(exp.Tiers) {
		return nil, fmt.Errorf("strategy %q: no hop from tier %d", name, tier)
	}
	spec := hops[tier+1]
	return strategies.New(spec, strategies.Env{
		N:     exp.Tiers[tier+1].Count,
		Clock: clock,
		Rand:  StrategySeed(exp.Seed, fmt.Sprintf("%s@%d", spec, id)),
		Loads: strategies.NewLoadBoard(),
	})
}

// TierRetryStats sums the policy counts of tier callers' balancers, by
// tier: lbs[tier] holds that tier's callers' balancers.
func TierRetryStats(lbs [][]*strategies.Balancer) func(tier int) *reports.RetryStats {
	return func(tier int) *reports.RetryStats {
		if tier >= len(lbs) {
			return nil
		}
		return PolicyStats(lbs[tier])
	}
}

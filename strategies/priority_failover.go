package strategies

import (
	"math"
	"math/rand/v2"
)

// DefaultOverprovisioning is the priority-failover wrapper's default
// overprovisioning factor, Envoy's (overprovisioning_factor 140).
const DefaultOverprovisioning = 1.4

func init() {
	registerZoneWrapper("priority-failover", []string{"overprovisioning"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		over, err := floatParam(params, "overprovisioning", DefaultOverprovisioning, 0.01, 100)
		if err != nil {
			return nil, err
		}
		pct := int(math.Round(over * 100))
		return func(inner Picker, env *buildEnv) Picker {
			return newPriorityFailover(inner, env, pct)
		}, nil
	})
}

// priorityFailover is the "priority-failover" wrapper: Envoy's priority
// levels, a model reproduced from its documented rules, with the client's
// own zone (Env.LocalZone) as priority 0 and every other zone together as
// priority 1. Over the hosts given and those of them that are healthy (not
// taken out by an eject or healthcheck inside it; see zones.go), in whole
// percents as Envoy computes them:
//
//   - each level's health is min(100, ⌊overprovisioning × healthy% ⌋)
//     (overprovisioning default 1.4, in [0.01, 100]); a level without hosts
//     has health 0;
//   - with T = min(100, health₀ + health₁), priority 0 gets
//     min(100, ⌊health₀ × 100 / T⌋) percent of the picks and priority 1
//     min(the rest, ⌊health₁ × 100 / T⌋); what rounding leaves goes to the
//     first level with health > 0. P0 72% healthy gets 100%, 71% gets 99%,
//     50% gets 70%;
//   - when T < 100, a level with fewer than 50% of its hosts healthy is in
//     panic: its picks go to all its hosts rather than its healthy ones;
//     when both levels are (or T is 0), the picks are shared by the levels'
//     host counts instead, and each gets all its hosts.
//
// A pick draws its level from Env.Rand (no draw when a level gets 100%)
// and the inner Picker chooses among that level's hosts, ascending.
//
// Departures from Envoy (one process models one Envoy):
//   - the levels come from zones, not from the priorities a control plane
//     gives the endpoints, and there are two: every remote zone shares
//     priority 1;
//   - no degraded or excluded hosts and no weighted priority health; the
//     panic threshold is fixed at 50%;
//   - within a level Envoy balances by locality (zone aware routing in
//     priority 0, or locality weights); here the inner Picker gets all the
//     level's hosts, and one inner Picker serves both levels, hearing of
//     the level's hosts through UpdateHosts whenever a Pick goes to the
//     other level than the previous one;
//   - in a level's panic its hosts pass through an eject inside, which still
//     removes those it ejected unless its own panic threshold applies.
type priorityFailover struct {
	// Immutable after construction.
	inner Picker
	rand  *rand.Rand
	over  int // overprovisioning factor, percent
	local int // zone id of the local zone

	// Mutable; the Balancer's mutex guards everything below.
	view zoneView
	feed zoneFeed
	// Derived from view when it is rebuilt.
	load0   int      // percent of the picks that go to priority 0
	targets [2]int   // by level: prioHealthy or prioAll
	remote  [2][]int // priority 1's hosts: [prioHealthy] the healthy ones, [prioAll] all
	local0  []int    // priority 0's hosts, all
}

// Targets of a priority-failover Pick: a level's healthy hosts or all of
// them, 0..3 as 2·level + kind.
const (
	prioHealthy = 0
	prioAll     = 1
)

var (
	_ Picker       = (*priorityFailover)(nil)
	_ HostsUpdater = (*priorityFailover)(nil)
)

func newPriorityFailover(inner Picker, env *buildEnv, over int) *priorityFailover {
	return &priorityFailover{
		inner: inner,
		rand:  env.rand,
		over:  over,
		local: env.zones.local,
		view:  newZoneView(env),
		feed:  newZoneFeed(inner),
	}
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (p *priorityFailover) UpdateHosts(hosts []int) { p.view.UpdateHosts(hosts) }

// Pick draws the level, then lets the inner Picker choose among its hosts.
func (p *priorityFailover) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if p.view.update(hosts) {
		p.decide(hosts)
		p.feed.rebuilt()
	}
	level := 1
	if p.load0 == 100 || (p.load0 > 0 && p.rand.IntN(100) < p.load0) {
		level = 0
	}
	kind := p.targets[level]
	var pass []int
	switch {
	case level == 1:
		pass = p.remote[kind]
	case kind == prioAll:
		pass = p.local0
	default:
		pass = p.view.healthyIn[p.local]
	}
	return p.feed.pick(p.inner, req, 2*level+kind, pass)
}

// decide derives each level's load and hosts from the view.
func (p *priorityFailover) decide(hosts []int) {
	v := &p.view
	p.local0 = p.local0[:0]
	p.remote[prioHealthy], p.remote[prioAll] = p.remote[prioHealthy][:0], p.remote[prioAll][:0]
	for _, h := range hosts {
		if v.zones.of[h] == p.local {
			p.local0 = append(p.local0, h)
		} else {
			p.remote[prioAll] = append(p.remote[prioAll], h)
		}
	}
	for _, h := range v.healthy {
		if v.zones.of[h] != p.local {
			p.remote[prioHealthy] = append(p.remote[prioHealthy], h)
		}
	}
	total := [2]int{len(p.local0), len(p.remote[prioAll])}
	healthy := [2]int{len(v.healthyIn[p.local]), len(p.remote[prioHealthy])}
	var health [2]int
	for l := range 2 {
		if total[l] > 0 {
			health[l] = min(100, p.over*healthy[l]/total[l])
		}
	}
	sum := min(100, health[0]+health[1])
	var panics [2]bool
	for l := range 2 {
		// A level without hosts counts as in panic, as Envoy's does.
		panics[l] = total[l] == 0 || (sum < 100 && 2*healthy[l] < total[l])
		p.targets[l] = prioHealthy
		if panics[l] {
			p.targets[l] = prioAll
		}
	}
	if sum == 0 || (panics[0] && panics[1]) {
		// Total panic: the levels share the picks by host count, and the
		// rounding remainder goes to the first level with hosts.
		n := total[0] + total[1]
		load0, load1 := 100*total[0]/n, 100*total[1]/n
		if total[0] > 0 {
			load0 = 100 - load1
		}
		p.load0, p.targets = load0, [2]int{prioAll, prioAll}
		return
	}
	load0 := min(100, health[0]*100/sum)
	load1 := min(100-load0, health[1]*100/sum)
	if health[0] > 0 {
		load0 = 100 - load1 // the rounding remainder
	}
	p.load0 = load0
}

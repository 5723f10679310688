package experiments

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Tier is one layer of a tiered fleet (the file's tiers:): the client
// sends its requests to the first tier, and an instance of a tier that
// has a downstream serves each request by doing its own work and then
// making Calls calls to the next tier, one after another, through a
// balancer of its own (the hop's strategy, retries included). A request
// succeeds when every one of its calls did; otherwise the instance
// answers 502. Instances are numbered in tier order.
type Tier struct {
	Name  string
	First int // the tier's first instance id
	Count int // its instances: First .. First+Count-1
	// Calls is how many downstream calls a request makes; 0 for the last
	// tier, which calls nobody.
	Calls int
}

// Contains reports whether instance id belongs to the tier.
func (t Tier) Contains(id int) bool { return id >= t.First && id < t.First+t.Count }

// Hop separates the strategies of a tiered request's hops in a strategy
// spec: "round-robin+retry(attempts=3) > round-robin > round-robin" is the
// client's strategy, then the first tier's, then the second's. A spec
// without it is every hop's strategy.
const Hop = ">"

// HopStrategies splits the strategy spec name into its hops' specs, one
// per tier: hop 0 is the client's (to the first tier), hop i that of
// tier i-1's instances (to tier i). A spec of one hop is every hop's. It
// returns nil when the number of hops is neither 1 nor len(tiers).
func HopStrategies(name string, tiers int) []string {
	parts := strings.Split(name, Hop)
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	switch {
	case tiers == 0 && len(parts) == 1:
		return parts
	case len(parts) == 1:
		hops := make([]string, tiers)
		for i := range hops {
			hops[i] = parts[0]
		}
		return hops
	case len(parts) == tiers:
		return parts
	}
	return nil
}

// EdgeStrategy is the client's strategy of spec name: its first hop.
func EdgeStrategy(name string) string {
	first, _, _ := strings.Cut(name, Hop)
	return strings.TrimSpace(first)
}

// TierOf returns the index of the tier instance id belongs to, or -1
// without tiers.
func (e *Experiment) TierOf(id int) int {
	for i, t := range e.Tiers {
		if t.Contains(id) {
			return i
		}
	}
	return -1
}

// EdgeCount is how many instances the client balances over: the first
// tier's, or every instance without tiers.
func (e *Experiment) EdgeCount() int {
	if len(e.Tiers) > 0 {
		return e.Tiers[0].Count
	}
	return e.Instances.Count
}

// fileTier is one entry of tiers:.
type fileTier struct {
	Name       string    `yaml:"name"`
	Instances  int       `yaml:"instances"`
	Service    yaml.Node `yaml:"service"`
	Workers    *int      `yaml:"workers"`
	Downstream string    `yaml:"downstream"`
	Calls      *int      `yaml:"calls"`
}

// buildTiers fills e.Tiers and the instances' settings from the file's
// tiers, listed in call order: the first is the one the client calls,
// and each names the next one as its downstream.
func (f *file) buildTiers(e *Experiment) error {
	in := &e.Instances
	if len(f.Instances.Groups) > 0 {
		return fieldErr("instances.groups", "does not go with tiers: give each tier's service in tiers[i].service")
	}
	index := map[string]int{}
	for i, t := range f.Tiers {
		name := fmt.Sprintf("tiers[%d].name", i)
		switch {
		case t.Name == "":
			return fieldErr(name, "is required, e.g. name: a")
		case strings.ContainsAny(t.Name, " ,()>="):
			return fieldErr(name, "%q: use letters, digits, '-' and '_'", t.Name)
		}
		if j, dup := index[t.Name]; dup {
			return fieldErr(name, "%q is also tiers[%d]'s name", t.Name, j)
		}
		index[t.Name] = i
	}
	var each []Instance
	for i, t := range f.Tiers {
		name := fmt.Sprintf("tiers[%d]", i)
		if t.Instances < 1 || len(each)+t.Instances > 1000 {
			return fieldErr(name+".instances", "must be >= 1 and the fleet at most 1000 instances, got %d", t.Instances)
		}
		c := Instance{Workers: in.Workers, Service: in.Service, Weight: 1}
		if t.Workers != nil {
			c.Workers = *t.Workers
		}
		if t.Service.Kind != 0 {
			c.Service = faultyserver.Dist{}
			if err := decodeJSONNode(&t.Service, &c.Service); err != nil {
				return fieldErr(name+".service", "%v", err)
			}
		} else if f.Instances.Service.Kind == 0 {
			return fieldErr(name+".service", "is required when instances.service gives no default, e.g. {dist: fixed, value: 1ms}")
		}
		tier := Tier{Name: t.Name, First: len(each), Count: t.Instances}
		switch j, known := index[t.Downstream]; {
		case t.Downstream == "" && t.Calls != nil:
			return fieldErr(name+".calls", "needs downstream: the tier its calls go to")
		case t.Downstream == "" && i+1 < len(f.Tiers):
			return fieldErr(name+".downstream", "is required: tier %q is listed after it, and only the last tier calls nobody", f.Tiers[i+1].Name)
		case t.Downstream == "":
		case !known:
			return fieldErr(name+".downstream", "unknown tier %q (tiers: %s)", t.Downstream, strings.Join(tierNames(f.Tiers), ", "))
		case j <= i:
			return fieldErr(name+".downstream", "%q calls %q, which forms a cycle (%s): a request would never end", t.Name, t.Downstream, cycle(f.Tiers, j, i))
		case j != i+1:
			return fieldErr(name+".downstream", "%q calls %q but the next tier listed is %q: list the tiers in call order, the client's first", t.Name, t.Downstream, f.Tiers[i+1].Name)
		default:
			tier.Calls = 1
			if t.Calls != nil {
				tier.Calls = *t.Calls
			}
			if tier.Calls < 1 || tier.Calls > 100 {
				return fieldErr(name+".calls", "must be within [1, 100] calls per request, got %d", tier.Calls)
			}
		}
		e.Tiers = append(e.Tiers, tier)
		for range t.Instances {
			each = append(each, c)
		}
	}
	if in.Count != 0 && in.Count != len(each) {
		return fieldErr("instances.count", "is %d but the tiers hold %d instances; leave count out or make them agree", in.Count, len(each))
	}
	in.Count, in.Each = len(each), each
	return nil
}

func tierNames(ts []fileTier) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

// cycle writes the calls from tier from to tier to and back, e.g. "a → b → a".
func cycle(ts []fileTier, from, to int) string {
	names := tierNames(ts)[from : to+1]
	return strings.Join(append(names, ts[from].Name), " → ")
}

// tierFault returns the instance ids of the tier a fault names.
func tierFault(name, tier string, tiers []Tier) ([]int, error) {
	for _, t := range tiers {
		if t.Name == tier {
			ids := make([]int, t.Count)
			for i := range ids {
				ids[i] = t.First + i
			}
			return ids, nil
		}
	}
	if len(tiers) == 0 {
		return nil, fieldErr(name+".tier", "names tier %q but the experiment has no tiers", tier)
	}
	names := make([]string, len(tiers))
	for i, t := range tiers {
		names[i] = t.Name
	}
	return nil, fieldErr(name+".tier", "unknown tier %q (tiers: %s)", tier, strings.Join(names, ", "))
}

// validateTiers checks what a tiered fleet runs with: lbchaos's own
// instances over HTTP/1.1, the tiers' sizes adding up to the fleet, and
// every strategy a chain of built-in strategies with one hop per tier
// (the client's may be any built-in one).
func (e *Experiment) validateTiers() error {
	if len(e.Tiers) == 0 {
		return nil
	}
	n := 0
	for _, t := range e.Tiers {
		n += t.Count
	}
	switch {
	case e.Instances.Foreign():
		return fieldErr("tiers", "need lbchaos's own instances, which call their downstream tier; external instances and instances.app cannot")
	case n != e.Instances.Count:
		return fieldErr("tiers", "hold %d instances but the run has %d (an override changed the count?); tiers fix the fleet's size", n, e.Instances.Count)
	case e.Protocol != ProtocolHTTP1:
		return fieldErr("tiers", "call each other over HTTP/1.1; protocol %s is not supported with tiers", e.Protocol)
	case e.Generators > 1:
		return fieldErr("tiers", "run with one load generator; generators: %d is not supported with tiers", e.Generators)
	case e.Keys != nil:
		return fieldErr("tiers", "keys are the client's and do not travel downstream; leave keys out with tiers")
	case len(e.Instances.Joining()) > 0:
		return fieldErr("tiers", "a tier's instances are all there from the start; join_at is not supported with tiers")
	}
	for i, s := range e.Strategies {
		field := fmt.Sprintf("strategies[%d]", i)
		hops := HopStrategies(s, len(e.Tiers))
		if hops == nil {
			return fieldErr(field, "%q has %d hops separated by %q but the experiment has %d tiers: give one strategy for every hop, or one per tier (the client's first)",
				s, strings.Count(s, Hop)+1, Hop, len(e.Tiers))
		}
		for h, hop := range hops {
			if proxyspec.IsProxy(hop) || strategies.IsGRPC(hop) {
				return fieldErr(field, "hop %d (%s): tiers run lbchaos's built-in strategies at every hop, not a proxy or a gRPC balancer", h, hop)
			}
		}
	}
	return nil
}

// checkHops validates every hop of a tiered strategy spec s (field
// names it) as a built-in strategy.
func (e *Experiment) checkHops(field, s string) error {
	hops := HopStrategies(s, len(e.Tiers))
	if len(hops) <= 1 || slices.ContainsFunc(hops, func(h string) bool { return proxyspec.IsProxy(h) || strategies.IsGRPC(h) }) {
		return nil // validateTiers reports it
	}
	for h, hop := range hops {
		if err := e.checkStrategy(fmt.Sprintf("%s (hop %d)", field, h), hop); err != nil {
			return err
		}
	}
	return nil
}

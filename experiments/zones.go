package experiments

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Zone is one zone of an experiment: a run of consecutive instances and a
// share of the clients. The client-side balancer replicas are spread over
// the zones by that share (replica r's zone is ReplicaZone(r)), and each
// zone's replicas send from a source address of their own.
type Zone struct {
	Name string
	// First and Count are the zone's instances, First..First+Count-1; a
	// zone may have clients and no instance.
	First, Count int
	// Clients is the zone's share of the clients, within [0,1]; the
	// zones' shares add up to 1.
	Clients float64
}

// Contains reports whether instance id is in the zone.
func (z Zone) Contains(id int) bool { return id >= z.First && id < z.First+z.Count }

// MaxZones bounds an experiment's zones (each has a loopback source
// address of its own).
const MaxZones = 16

// maxZoneReplicas bounds the replicas chosen to split the clients by
// their shares: the most replicas a run has.
const maxZoneReplicas = 64

// ZoneOf returns the index of instance id's zone, -1 without zones.
func (e *Experiment) ZoneOf(id int) int {
	for i, z := range e.Zones {
		if z.Contains(id) {
			return i
		}
	}
	return -1
}

// ReplicaZone returns the zone of balancer replica r (of exp.Replicas;
// request k goes to replica k mod Replicas): the zones take the replicas
// in order, each as many as its share of the clients gives. -1 without
// zones.
func (e *Experiment) ReplicaZone(r int) int {
	if len(e.Zones) == 0 {
		return -1
	}
	r %= max(1, e.Replicas)
	for i, n := range e.zoneReplicas() {
		if r < n {
			return i
		}
		r -= n
	}
	return len(e.Zones) - 1
}

// zoneReplicas is how many replicas each zone's clients have.
func (e *Experiment) zoneReplicas() []int {
	out := make([]int, len(e.Zones))
	for i, z := range e.Zones {
		out[i] = int(math.Round(z.Clients * float64(e.Replicas)))
	}
	return out
}

// InstanceZones returns the zone name of each of the first n instances,
// as a balancer's Env.Zones; nil without zones.
func (e *Experiment) InstanceZones(n int) []string {
	if len(e.Zones) == 0 {
		return nil
	}
	out := make([]string, n)
	for id := range out {
		if z := e.ZoneOf(id); z >= 0 {
			out[id] = e.Zones[z].Name
		}
	}
	return out
}

// ZoneClients returns each zone's share of the clients, as a balancer's
// Env.ZoneClients; nil without zones.
func (e *Experiment) ZoneClients() map[string]float64 {
	if len(e.Zones) == 0 {
		return nil
	}
	m := make(map[string]float64, len(e.Zones))
	for _, z := range e.Zones {
		m[z.Name] = z.Clients
	}
	return m
}

// ZoneNames returns the zones' names in order.
func (e *Experiment) ZoneNames() []string {
	out := make([]string, len(e.Zones))
	for i, z := range e.Zones {
		out[i] = z.Name
	}
	return out
}

// zoneIndex returns the index of the zone named name, -1 if none is.
func (e *Experiment) zoneIndex(name string) int {
	return slices.IndexFunc(e.Zones, func(z Zone) bool { return z.Name == name })
}

// fileZone is a zone as the file gives it.
type fileZone struct {
	Name      string     `yaml:"name"`
	Instances *int       `yaml:"instances"`
	Clients   *fileShare `yaml:"clients"`
}

// fileShare is a share written as a percentage ("50%") or a fraction
// (0.5).
type fileShare float64

func (s *fileShare) UnmarshalYAML(n *yaml.Node) error {
	v := strings.TrimSpace(n.Value)
	if n.Kind != yaml.ScalarNode || v == "" {
		return fmt.Errorf("want a share such as 50%% or 0.5")
	}
	scale := 1.0
	if p, ok := strings.CutSuffix(v, "%"); ok {
		v, scale = strings.TrimSpace(p), 0.01
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%q is not a share; want e.g. 50%% or 0.5", n.Value)
	}
	*s = fileShare(f * scale)
	return nil
}

var zoneName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`)

// buildZones fills e.Zones, e.CrossZoneLatency and, when the file gives
// no replicas, e.Replicas: the fewest that split the clients by their
// shares. The instances' count may be left out: the zones give it.
func (f *file) buildZones(e *Experiment) error {
	if len(f.Zones) == 0 {
		if f.CrossZone != "" {
			return fieldErr("cross_zone_latency", "needs zones: (each zone's name, instances and share of clients)")
		}
		return nil
	}
	if len(f.Zones) > MaxZones {
		return fieldErr("zones", "has %d zones; at most %d", len(f.Zones), MaxZones)
	}
	var err error
	if e.CrossZoneLatency, err = duration("cross_zone_latency", f.CrossZone, 0); err != nil {
		return err
	}
	first, given := 0, 0
	for i, fz := range f.Zones {
		field := fmt.Sprintf("zones[%d]", i)
		if !zoneName.MatchString(fz.Name) {
			return fieldErr(field+".name", "%q: want lower-case letters, digits and '-', at most 31, e.g. a or us-east-1a", fz.Name)
		}
		if e.zoneIndex(fz.Name) >= 0 {
			return fieldErr(field+".name", "zone %q is listed twice", fz.Name)
		}
		if fz.Instances == nil {
			return fieldErr(field+".instances", "is required: how many instances the zone has (0 for clients only)")
		}
		z := Zone{Name: fz.Name, First: first, Count: *fz.Instances}
		if z.Count < 0 {
			return fieldErr(field+".instances", "must be >= 0, got %d", z.Count)
		}
		if fz.Clients != nil {
			z.Clients = float64(*fz.Clients)
			given++
		}
		first += max(0, z.Count)
		e.Zones = append(e.Zones, z)
	}
	switch {
	case given == 0:
		// The clients spread as the instances do.
		for i := range e.Zones {
			e.Zones[i].Clients = float64(e.Zones[i].Count) / float64(max(1, first))
		}
	case given != len(f.Zones):
		return fieldErr("zones", "give every zone's clients share or none (then the clients spread as the instances do); %d of %d give one", given, len(f.Zones))
	}
	if f.Instances.Count == 0 {
		e.Instances.Count = first
	}
	if f.Replicas == nil {
		if e.Replicas = fewestReplicas(e.Zones); e.Replicas == 0 {
			var shares []string
			for _, z := range e.Zones {
				shares = append(shares, fmt.Sprintf("%s %g%%", z.Name, 100*z.Clients))
			}
			return fieldErr("zones", "the clients' shares (%s) split exactly over no number of client replicas up to %d; round them to shares such a count splits (halves, thirds, quarters, ...), or give replicas and shares it splits",
				strings.Join(shares, ", "), maxZoneReplicas)
		}
	}
	return nil
}

// fewestReplicas is the fewest replicas that split the clients by the
// zones' shares, or 0 when none up to maxZoneReplicas does.
func fewestReplicas(zones []Zone) int {
	for r := 1; r <= maxZoneReplicas; r++ {
		if splits(zones, r) {
			return r
		}
	}
	return 0
}

// splits reports whether r replicas split the clients exactly by the
// zones' shares.
func splits(zones []Zone, r int) bool {
	for _, z := range zones {
		x := z.Clients * float64(r)
		if math.Abs(x-math.Round(x)) > 1e-6 {
			return false
		}
	}
	return true
}

// zoneFault resolves a fault entry's zone: (its instances) or partition:
// [a, b] (a fault on each instance of either zone that acts on the
// traffic of the other zone's clients alone: by default every packet
// dropped, {mode: loss, p: 1}).
func zoneFault(name string, ff fileFault, e *Experiment) (ids []int, from [][]string, err error) {
	if len(e.Zones) == 0 {
		return nil, nil, fieldErr(name, "names a zone but the experiment has no zones:")
	}
	zone := func(field, n string) (Zone, error) {
		if i := e.zoneIndex(n); i >= 0 {
			return e.Zones[i], nil
		}
		return Zone{}, fieldErr(field, "unknown zone %q (zones: %s)", n, strings.Join(e.ZoneNames(), ", "))
	}
	if ff.Zone != "" {
		z, err := zone(name+".zone", ff.Zone)
		if err != nil {
			return nil, nil, err
		}
		if z.Count == 0 {
			return nil, nil, fieldErr(name+".zone", "zone %q has no instances", z.Name)
		}
		for id := z.First; id < z.First+z.Count; id++ {
			ids = append(ids, id)
		}
		return ids, make([][]string, len(ids)), nil
	}
	if len(ff.Partition) != 2 || ff.Partition[0] == ff.Partition[1] {
		return nil, nil, fieldErr(name+".partition", "wants two zones, e.g. partition: [a, b]; got %v", ff.Partition)
	}
	for k, n := range ff.Partition {
		z, err := zone(fmt.Sprintf("%s.partition[%d]", name, k), n)
		if err != nil {
			return nil, nil, err
		}
		other := ff.Partition[1-k]
		for id := z.First; id < z.First+z.Count; id++ {
			ids, from = append(ids, id), append(from, []string{other})
		}
	}
	if len(ids) == 0 {
		return nil, nil, fieldErr(name+".partition", "zones %s and %s have no instances", ff.Partition[0], ff.Partition[1])
	}
	return ids, from, nil
}

// validateZones checks the zones against the fleet, the run and the
// strategies: they hold the fleet's instances, the clients' shares add
// up and split over the replicas, and every strategy is lbchaos's own
// balancer, which knows the client's zone. Without zones, it refuses a
// strategy with a zone wrapper and a fault that names client zones.
func (e *Experiment) validateZones() error {
	if len(e.Zones) == 0 {
		for i, s := range e.Strategies {
			hops := []string{s}
			if strings.Contains(s, Hop) {
				hops = HopStrategies(s, len(e.Tiers))
			}
			for h, hop := range hops {
				if spec, err := strategies.Parse(hop); err == nil && strategies.NeedsZones(spec) {
					field := fmt.Sprintf("strategies[%d]", i)
					if len(hops) > 1 {
						field += fmt.Sprintf(" (hop %d)", h)
					}
					return fieldErr(field, "%q routes by zone and needs zones: (each zone's name, instances and share of clients)", hop)
				}
			}
		}
		return nil
	}
	n, sum := 0, 0.0
	for i, z := range e.Zones {
		if !(z.Clients >= 0 && z.Clients <= 1) {
			return fieldErr(fmt.Sprintf("zones[%d].clients", i), "must be within [0%%, 100%%], got %g%%", 100*z.Clients)
		}
		n += z.Count
		sum += z.Clients
	}
	var shares []string
	for _, z := range e.Zones {
		shares = append(shares, fmt.Sprintf("%s %g%%", z.Name, 100*z.Clients))
	}
	switch {
	case n != e.Instances.Count:
		return fieldErr("zones", "hold %d instances but the run has %d (instances.count, or an override, changed it); zones fix the fleet's size", n, e.Instances.Count)
	case math.Abs(sum-1) > 1e-6:
		return fieldErr("zones", "clients shares add up to %g%% (%s); want 100%%", 100*sum, strings.Join(shares, ", "))
	case !splits(e.Zones, max(1, e.Replicas)):
		hint := "round the shares to ones some count up to 64 splits"
		if r := fewestReplicas(e.Zones); r > 0 {
			hint = fmt.Sprintf("give a count that does, e.g. %d, or leave replicas out", r)
		}
		return fieldErr("replicas", "%d cannot split the clients by zone (%s); %s", e.Replicas, strings.Join(shares, ", "), hint)
	case e.CrossZoneLatency < 0 || e.CrossZoneLatency >= e.Timeout:
		return fieldErr("cross_zone_latency", "must be within [0, timeout %v), got %v", e.Timeout, e.CrossZoneLatency)
	case len(e.Tiers) > 0:
		return fieldErr("zones", "do not go with tiers")
	case e.Instances.Foreign():
		return fieldErr("zones", "need lbchaos's own instances on this machine, each zone's clients sending from a loopback address of their own; external instances and instances.app cannot")
	case e.Protocol != ProtocolHTTP1:
		return fieldErr("zones", "send over HTTP/1.1; protocol %s is not supported with zones", e.Protocol)
	case e.Generators > 1:
		return fieldErr("zones", "run with one load generator; generators: %d is not supported with zones", e.Generators)
	}
	for i, s := range e.Strategies {
		if proxyspec.IsProxy(s) || strategies.IsGRPC(s) {
			return fieldErr(fmt.Sprintf("strategies[%d]", i), "%q: with zones every strategy is lbchaos's own client-side balancer, which knows its client's zone; a proxy or gRPC balancer does not", s)
		}
	}
	for i, f := range e.Faults {
		if len(f.From) > 0 && !faultyserver.IsNetworkFault(f.Spec) {
			_, name := f.where(i)
			return fieldErr(name+".fault", "a partition drops packets between zones: its fault must be a network fault (loss or syn-drop), got %q", f.Spec.Mode())
		}
	}
	return nil
}

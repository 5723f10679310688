package strategies

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Zones: what the zone wrappers (zone-aware, priority-failover,
// prefer-close) share. The Env names each endpoint's zone and the client's
// own (Env.Zones, Env.LocalZone, Env.ZoneClients); a zone wrapper reads,
// at each Pick, which of its hosts are healthy, by zone, and passes the
// chosen hosts on.
//
// Composition: a wrapper wraps the spec written before it ("p2c+eject+
// zone-aware": zone-aware wraps eject, which wraps p2c), so a zone wrapper
// written after eject or healthcheck is outside them. It is given every
// host, counts as unhealthy those that any eject or healthcheck inside it
// takes out (its healthSource), chooses a zone from the healthy ones and
// passes that zone's healthy hosts to the wrappers inside, and through them
// to the base strategy, which picks within the zone. Written before them
// ("p2c+zone-aware+eject"), it sees only the hosts they leave, all of
// which it counts as healthy: it still balances zones over them, but
// ejected hosts no longer count towards its panic threshold or its
// per-level health.

// zoneMap is the checked zones of an Env.
type zoneMap struct {
	names   []string  // by zone id: the zones of Env.Zones in order of first appearance, then the zones only Env.ZoneClients names, sorted
	of      []int     // by endpoint: its zone id
	local   int       // the zone id of Env.LocalZone
	clients []float64 // by zone id: its share of the clients; they sum to 1
	// clientZones is how many zones have clients.
	clientZones int
}

// newZoneMap checks the zone fields of env; nil without zones.
func newZoneMap(env Env) (*zoneMap, error) {
	if env.Zones == nil {
		if env.LocalZone != "" || env.ZoneClients != nil {
			return nil, errors.New("strategies: Env.LocalZone and Env.ZoneClients need Env.Zones, the zone of each endpoint; it is nil")
		}
		return nil, nil
	}
	if len(env.Zones) != env.N {
		return nil, fmt.Errorf("strategies: Env.Zones has %d zones for %d endpoints", len(env.Zones), env.N)
	}
	z := &zoneMap{of: make([]int, env.N)}
	ids := map[string]int{}
	for ep, name := range env.Zones {
		if name == "" {
			return nil, fmt.Errorf("strategies: Env.Zones: endpoint %d has an empty zone name", ep)
		}
		id, ok := ids[name]
		if !ok {
			id = len(z.names)
			ids[name] = id
			z.names = append(z.names, name)
		}
		z.of[ep] = id
	}
	for _, name := range slices.Sorted(maps.Keys(env.ZoneClients)) {
		if name == "" {
			return nil, errors.New("strategies: Env.ZoneClients names a zone with an empty name")
		}
		if share := env.ZoneClients[name]; !(share >= 0) || math.IsInf(share, 0) {
			return nil, fmt.Errorf("strategies: Env.ZoneClients: zone %q has a clients share of %v; want a finite number >= 0", name, share)
		}
		if _, ok := ids[name]; !ok {
			ids[name] = len(z.names)
			z.names = append(z.names, name)
		}
	}
	if env.LocalZone == "" {
		return nil, errors.New("strategies: Env.LocalZone is empty; with Env.Zones the client's own zone is required")
	}
	local, ok := ids[env.LocalZone]
	if !ok {
		return nil, fmt.Errorf("strategies: Env.LocalZone %q is none of the zones (%s)", env.LocalZone, joinQuoted(z.names))
	}
	z.local = local
	z.clients = make([]float64, len(z.names))
	if env.ZoneClients == nil {
		for _, id := range z.of {
			z.clients[id] += 1 / float64(env.N)
		}
	} else {
		sum := 0.0
		for name, share := range env.ZoneClients {
			z.clients[ids[name]] = share
			sum += share
		}
		if !(sum > 0) || math.IsInf(sum, 0) {
			return nil, fmt.Errorf("strategies: Env.ZoneClients: the clients shares sum to %v; want a finite sum > 0", sum)
		}
		for i := range z.clients {
			z.clients[i] /= sum
		}
		if z.clients[local] == 0 {
			return nil, fmt.Errorf("strategies: Env.ZoneClients gives the local zone %q no clients", env.LocalZone)
		}
	}
	for _, share := range z.clients {
		if share > 0 {
			z.clientZones++
		}
	}
	return z, nil
}

func joinQuoted(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", n)
	}
	return s
}

// zoneWrappers are the wrappers that need zones; New refuses to build one
// without Env.Zones (checkNeeds).
var zoneWrappers = map[string]bool{}

// registerZoneWrapper registers a wrapper that needs zones; it is called
// from init.
func registerZoneWrapper(name string, params []string, configure func(map[string]string) (func(Picker, *buildEnv) Picker, error)) {
	registerWrapper(name, params, configure)
	zoneWrappers[name] = true
}

// checkNeeds reports a wrapper of spec that env cannot build: a zone
// wrapper without zones. The error names the wrapper.
func checkNeeds(spec Spec, env *buildEnv) error {
	for _, w := range spec.Wrappers {
		if zoneWrappers[w.Name] && env.zones == nil {
			return fmt.Errorf("%s: needs the zone of every endpoint and of the client (Env.Zones, Env.LocalZone), none were given; an experiment must give zones: (each zone's name, instances and share of clients)", w.Name)
		}
	}
	return nil
}

// healthSource is implemented by the wrappers that take unhealthy hosts
// out (eject, healthcheck): a zone wrapper outside them counts a host as
// healthy when none of them takes it out.
type healthSource interface {
	// healthCount first applies the changes due at or before now (the
	// re-admissions a Pick would make), then returns a count that grows
	// whenever the set of hosts taken out changes.
	healthCount(now time.Time) uint64
	// takesOut reports whether the layer takes endpoint ep out.
	takesOut(ep int) bool
}

var (
	_ healthSource = (*ejector)(nil)
	_ healthSource = (*healthcheck)(nil)
)

// healthCount is the number of ejections plus the number of
// re-admissions: 2·ejections − ejected now.
func (e *ejector) healthCount(now time.Time) uint64 {
	if !now.Before(e.due) {
		if e.nextTick.IsZero() {
			e.nextTick = now.Add(e.cfg.interval)
		}
		e.Sweep(now)
	}
	return uint64(2*e.ejections - e.nEjected)
}

func (e *ejector) takesOut(ep int) bool { return e.state[ep].ejected }

// healthCount is the number of endpoints marked down plus the number
// marked up again: 2·downs − down now. Probes change it, not time.
func (c *healthcheck) healthCount(time.Time) uint64 {
	return uint64(2*c.ejections - c.nDown)
}

func (c *healthcheck) takesOut(ep int) bool { return c.down[ep] }

// healthSources returns the health sources among layers.
func healthSources(layers []Picker) []healthSource {
	var out []healthSource
	for _, p := range layers {
		if s, ok := p.(healthSource); ok {
			out = append(out, s)
		}
	}
	return out
}

// zoneView is a zone wrapper's view of the hosts it is given: which are
// healthy, overall and by zone. update rebuilds it at a Pick when the hosts
// changed (UpdateHosts) or a layer inside changed the hosts it takes out.
// The Balancer's mutex guards it.
type zoneView struct {
	// Immutable after construction.
	zones   *zoneMap
	sources []healthSource
	clock   Clock

	stale bool     // the hosts changed since the latest rebuild
	gens  []uint64 // each source's healthCount at the latest rebuild

	total     int     // hosts given
	healthy   []int   // the healthy hosts, ascending
	perZone   []int   // by zone id: hosts given in it
	healthyIn [][]int // by zone id: its healthy hosts, ascending
	// zonesWithHosts is how many zones have a host given.
	zonesWithHosts int
}

func newZoneView(env *buildEnv) zoneView {
	v := zoneView{
		zones:     env.zones,
		sources:   healthSources(env.inside),
		clock:     env.clock,
		stale:     true,
		perZone:   make([]int, len(env.zones.names)),
		healthyIn: make([][]int, len(env.zones.names)),
	}
	v.gens = make([]uint64, len(v.sources))
	return v
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (v *zoneView) UpdateHosts([]int) { v.stale = true }

// update brings the view up to date for a Pick from hosts; it reports
// whether it was rebuilt.
func (v *zoneView) update(hosts []int) bool {
	changed := v.stale
	if len(v.sources) > 0 {
		now := v.clock.Now()
		for i, s := range v.sources {
			if g := s.healthCount(now); g != v.gens[i] {
				v.gens[i], changed = g, true
			}
		}
	}
	if !changed {
		return false
	}
	v.stale = false
	v.total = len(hosts)
	v.healthy = v.healthy[:0]
	clear(v.perZone)
	for i := range v.healthyIn {
		v.healthyIn[i] = v.healthyIn[i][:0]
	}
	for _, h := range hosts {
		z := v.zones.of[h]
		v.perZone[z]++
		if v.healthyHost(h) {
			v.healthy = append(v.healthy, h)
			v.healthyIn[z] = append(v.healthyIn[z], h)
		}
	}
	v.zonesWithHosts = 0
	for _, n := range v.perZone {
		if n > 0 {
			v.zonesWithHosts++
		}
	}
	return true
}

func (v *zoneView) healthyHost(h int) bool {
	for _, s := range v.sources {
		if s.takesOut(h) {
			return false
		}
	}
	return true
}

// panics reports whether fewer than half of the hosts given are healthy:
// Envoy's panic threshold at its default, 50%.
func (v *zoneView) panics() bool { return 2*len(v.healthy) < v.total }

// What a zone wrapper passes to its inner Picker at a Pick: every host
// given, every healthy one, or a zone's healthy hosts (target >= 0, a zone
// id, or another set the wrapper numbers from 0).
const (
	passAll     = -2
	passHealthy = -1
)

// zoneFeed gives a zone wrapper's inner Picker the hosts chosen for each
// Pick, telling it of a change (HostsUpdater) when the choice differs from
// the previous Pick's or the view was rebuilt.
type zoneFeed struct {
	feed hostFeed
	last int // the target of the previous Pick
}

func newZoneFeed(inner Picker) zoneFeed { return zoneFeed{feed: newHostFeed(inner), last: passAll} }

// rebuilt notes that the hosts of every target may have changed.
func (f *zoneFeed) rebuilt() { f.feed.changed() }

// pick lets inner choose among hosts, the hosts of target.
func (f *zoneFeed) pick(inner Picker, req Request, target int, hosts []int) (int, func(Outcome)) {
	if target != f.last {
		f.last = target
		f.feed.changed()
	}
	f.feed.sync(hosts)
	return inner.Pick(req, hosts)
}

// NeedsZones reports whether spec has a zone wrapper, which needs the
// zones of its endpoints and of its client.
func NeedsZones(spec Spec) bool {
	for _, w := range spec.Wrappers {
		if zoneWrappers[w.Name] {
			return true
		}
	}
	return false
}

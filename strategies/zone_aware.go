package strategies

import "math/rand/v2"

// Defaults of the zone-aware wrapper, Envoy's (zone_aware_lb_config).
const (
	DefaultZoneMinClusterSize = 6
	DefaultZoneRoutingEnabled = 100.0
)

func init() {
	registerZoneWrapper("zone-aware", []string{"min_cluster_size", "routing_enabled"}, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		minSize, err := intParam(params, "min_cluster_size", DefaultZoneMinClusterSize, 0)
		if err != nil {
			return nil, err
		}
		enabled, err := floatParam(params, "routing_enabled", DefaultZoneRoutingEnabled, 0, 100)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newZoneAware(inner, env, minSize, enabled/100)
		}, nil
	})
}

// zoneAware is the "zone-aware" wrapper: Envoy's zone aware routing, a
// model reproduced from its documented rules, for one client in
// Env.LocalZone. At each Pick, over the hosts given and those of them that
// are healthy (not taken out by an eject or healthcheck inside it; see
// zones.go):
//
//   - panic: when fewer than 50% of the hosts are healthy, every host is
//     passed on, with no zone logic (Envoy's panic threshold at its default);
//   - zone logic applies only when the hosts span at least 2 zones, the
//     local zone has at least one host, the clients span at least 2 zones
//     (Env.ZoneClients; Envoy's local cluster) and at least min_cluster_size
//     (default 6, >= 0) hosts are healthy; otherwise every healthy host is
//     passed on;
//   - it applies to routing_enabled percent of the picks (default 100, in
//     [0, 100]); the others get every healthy host;
//   - with L_i the share of clients in zone i and U_i the share of the
//     healthy hosts in zone i: when U_local >= L_local (and U_local > 0),
//     the local zone's healthy hosts; otherwise those of the local zone with
//     probability U_local/L_local, else those of a remote zone drawn with
//     weight max(0, U_i − L_i), its residual capacity. With L 40/40/20 and
//     U 25/50/25, a client of the first zone keeps 62.5% local and sends
//     25% to the second and 12.5% to the third.
//
// The inner Picker chooses within the hosts passed, which are ascending;
// every random choice is drawn from Env.Rand, and the shares are
// recomputed at the first Pick after the hosts or their health change.
//
// Departures from Envoy (one process models one Envoy):
//   - the local cluster is Env.ZoneClients, fixed: its shares are given,
//     never unhealthy, never in panic, and do not change during a run;
//     Envoy counts its local cluster's healthy hosts per zone;
//   - there is one priority level, and no degraded or excluded hosts; the
//     panic threshold is fixed at 50%;
//   - a local zone without hosts turns zone logic off; current Envoy then
//     spreads the picks over the remote zones by residual capacity (no
//     force_local_zone, no ORCA utilisation basis: zones weigh by host
//     count, not host weight);
//   - shares and probabilities are floating point, where Envoy uses integer
//     basis points (1/10000, rounded down) and routing_enabled rounded to
//     a whole percent;
//   - Envoy keeps one load balancer (round robin position, EDF schedule)
//     per zone; here one inner Picker serves every zone and hears of the
//     zone's hosts through UpdateHosts whenever a Pick goes to another zone
//     than the previous one, so a strategy that derives state from its hosts
//     (ring-hash, maglev, weighted round robin) rebuilds it at each switch;
//   - in panic every host is passed to the wrappers inside, and an eject
//     inside still removes the hosts it ejected unless its own panic
//     threshold applies: "p2c+eject(panic=0.5)+zone-aware" gives Envoy's panic,
//     where every host, ejected or not, may be picked.
type zoneAware struct {
	// Immutable after construction.
	inner   Picker
	rand    *rand.Rand
	minSize int
	enabled float64 // routing_enabled as a probability
	local   int     // zone id of the local zone

	// Mutable; the Balancer's mutex guards everything below.
	view zoneView
	feed zoneFeed
	// Derived from view when it is rebuilt.
	mode   zoneMode
	pLocal float64   // zoneSpill: probability of the local zone
	spill  []int     // zoneSpill: zone ids with residual capacity
	cum    []float64 // zoneSpill: cumulative residual capacity of spill
}

// zoneMode is what a zone-aware Pick does.
type zoneMode int

const (
	zonePanic zoneMode = iota // every host given
	zoneOff                   // every healthy host
	zoneLocal                 // the local zone's healthy hosts
	zoneSpill                 // local with probability pLocal, else by residual capacity
)

var (
	_ Picker       = (*zoneAware)(nil)
	_ HostsUpdater = (*zoneAware)(nil)
)

func newZoneAware(inner Picker, env *buildEnv, minSize int, enabled float64) *zoneAware {
	return &zoneAware{
		inner:   inner,
		rand:    env.rand,
		minSize: minSize,
		enabled: enabled,
		local:   env.zones.local,
		view:    newZoneView(env),
		feed:    newZoneFeed(inner),
	}
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (z *zoneAware) UpdateHosts(hosts []int) { z.view.UpdateHosts(hosts) }

// Pick chooses the hosts to pass on as the rules say, then lets the inner
// Picker choose among them.
func (z *zoneAware) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if z.view.update(hosts) {
		z.decide()
		z.feed.rebuilt()
	}
	target := z.choose()
	switch target {
	case passAll:
		return z.feed.pick(z.inner, req, target, hosts)
	case passHealthy:
		return z.feed.pick(z.inner, req, target, z.view.healthy)
	}
	return z.feed.pick(z.inner, req, target, z.view.healthyIn[target])
}

// decide derives the mode, and the shares of zoneSpill, from the view.
func (z *zoneAware) decide() {
	v := &z.view
	healthy := len(v.healthy)
	switch {
	case v.panics():
		z.mode = zonePanic
		return
	case v.zonesWithHosts < 2, v.perZone[z.local] == 0, v.zones.clientZones < 2, healthy < z.minSize:
		z.mode = zoneOff
		return
	}
	share := func(zone int) float64 { return float64(len(v.healthyIn[zone])) / float64(healthy) }
	uLocal, lLocal := share(z.local), v.zones.clients[z.local]
	if uLocal > 0 && uLocal >= lLocal {
		z.mode = zoneLocal
		return
	}
	z.mode, z.pLocal = zoneSpill, uLocal/lLocal
	z.spill, z.cum = z.spill[:0], z.cum[:0]
	sum := 0.0
	for zone, l := range v.zones.clients {
		if zone == z.local {
			continue
		}
		if r := share(zone) - l; r > 0 {
			sum += r
			z.spill = append(z.spill, zone)
			z.cum = append(z.cum, sum)
		}
	}
	if len(z.spill) == 0 { // only by rounding: U_local < L_local leaves capacity elsewhere
		z.mode = zoneLocal
		if uLocal == 0 {
			z.mode = zoneOff
		}
	}
}

// choose returns the target of one Pick: passAll, passHealthy or a zone id.
func (z *zoneAware) choose() int {
	switch z.mode {
	case zonePanic:
		return passAll
	case zoneOff:
		return passHealthy
	}
	if z.enabled < 1 && !(z.rand.Float64() < z.enabled) {
		return passHealthy
	}
	if z.mode == zoneLocal || z.rand.Float64() < z.pLocal {
		return z.local
	}
	x := z.rand.Float64() * z.cum[len(z.cum)-1]
	for i, c := range z.cum {
		if x < c {
			return z.spill[i]
		}
	}
	return z.spill[len(z.spill)-1]
}

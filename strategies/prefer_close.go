package strategies

func init() {
	registerZoneWrapper("prefer-close", nil, func(map[string]string) (func(Picker, *buildEnv) Picker, error) {
		return func(inner Picker, env *buildEnv) Picker { return newPreferClose(inner, env) }, nil
	})
}

// preferClose is the "prefer-close" wrapper: a Kubernetes Service with
// trafficDistribution: PreferClose (PreferSameZone), a model reproduced
// from its documented rules. The EndpointSlice controller hints every
// ready endpoint with its own zone, and kube-proxy on a node of zone z
// keeps the ready endpoints hinted for z when there is at least one,
// otherwise all ready endpoints. Here, at each Pick: the healthy hosts (not
// taken out by an eject or healthcheck inside it; see zones.go; Kubernetes'
// ready) of Env.LocalZone when there is one, else every healthy host, else,
// when none is healthy, every host given, for the wrappers inside to
// decide. The inner Picker chooses among them, ascending.
//
// There is no balance check: a zone with one endpoint and most of the
// clients sends all their traffic to that endpoint, the known hazard of
// PreferClose (topology-mode Auto, which checks the balance and allocates
// endpoints to zones by CPU, is not modelled). The wrapper draws no random
// number.
//
// Departures from Kubernetes:
//   - the choice is made per request by the inner strategy, where kube-proxy
//     picks per connection, uniformly at random (iptables' statistic match,
//     nftables' numgen), and conntrack keeps the connection's pod; put the
//     pinned wrapper inside ("random+pinned+prefer-close") for that;
//   - ready is this Balancer's view of health, changed by its own eject and
//     healthcheck wrappers at once, where Kubernetes follows readiness
//     probes through the EndpointSlice and each node's resync; there is no
//     serving-while-terminating fallback (none healthy passes every host);
//   - every endpoint has a zone, so the hints are always complete.
type preferClose struct {
	// Immutable after construction.
	inner Picker
	local int // zone id of the local zone

	// Mutable; the Balancer's mutex guards everything below.
	view   zoneView
	feed   zoneFeed
	target int // derived from view: the local zone, passHealthy or passAll
}

var (
	_ Picker       = (*preferClose)(nil)
	_ HostsUpdater = (*preferClose)(nil)
)

func newPreferClose(inner Picker, env *buildEnv) *preferClose {
	return &preferClose{
		inner: inner,
		local: env.zones.local,
		view:  newZoneView(env),
		feed:  newZoneFeed(inner),
	}
}

// UpdateHosts notes that the hosts of the next Pick changed.
func (p *preferClose) UpdateHosts(hosts []int) { p.view.UpdateHosts(hosts) }

// Pick passes the local zone's healthy hosts, or the fallback, to the inner
// Picker.
func (p *preferClose) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if p.view.update(hosts) {
		switch {
		case len(p.view.healthyIn[p.local]) > 0:
			p.target = p.local
		case len(p.view.healthy) > 0:
			p.target = passHealthy
		default:
			p.target = passAll
		}
		p.feed.rebuilt()
	}
	switch p.target {
	case passAll:
		return p.feed.pick(p.inner, req, passAll, hosts)
	case passHealthy:
		return p.feed.pick(p.inner, req, passHealthy, p.view.healthy)
	}
	return p.feed.pick(p.inner, req, p.target, p.view.healthyIn[p.local])
}

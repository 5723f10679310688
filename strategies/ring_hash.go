package strategies

import "math/rand/v2"

func init() {
	registerBase("ring-hash", []string{"min_ring", "max_ring"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		minRing, maxRing, err := ringSizeParams(params, "max_ring")
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return &ringHash{rand: env.rand, weights: env.weights, minRing: minRing, maxRing: maxRing}
		}, nil
	})
}

// ringHash is Envoy's ring hash (consistent hashing, Karger et al. 1997):
// every host owns points on a ring of 64-bit hashes and a request goes to the
// owner of the first point clockwise from the hash of its key, found by
// binary search and wrapping around past the last point.
//
// Parameters: min_ring (default 1024) and max_ring (default 8388608), each in
// [1, 8388608] with min_ring <= max_ring, bound the ring size as Envoy's
// minimum_ring_size and maximum_ring_size do. Points are handed out in
// proportion to the endpoints' weights (Env.Weights), scaled so that the
// lightest host gets at least one point and the ring has at least min_ring
// points (see ringPointCounts); with equal weights and N hosts every host
// gets ceil(min_ring/N) points, 103 each for N = 10, 2 each for N = 1000.
// A host's points are the xxHash64 of "endpoint-<id>_<i>", so they do not
// depend on the other hosts: when a host leaves, its keys move to the hosts
// after its points and, as long as the per-host point count is unchanged,
// no other key moves. When the count changes (ceil(min_ring/N) grows as N
// shrinks) the new points take some keys from other hosts too, as in Envoy.
//
// The ring is rebuilt at the first pick with a key after the host set
// changes (UpdateHosts; for instance when the eject wrapper hides an
// endpoint); building for 1000 hosts at the default sizes takes well under a
// millisecond (BenchmarkRingBuild). The ring depends only on the set of
// hosts, not on their order in the slice.
//
// A key is hashed with xxHash64 of its 8 bytes, little-endian; Envoy hashes
// the header text with xxHash64. A request without a key goes to a host
// drawn uniformly at random from the given hosts; Envoy, without a hash
// policy, hashes a random number instead, which follows the ring's shares
// (and so the weights) rather than being uniform over hosts. The point
// counts follow Envoy's formula, but over the hosts in id order and with a
// small tolerance against rounding error (see ringPointCounts); points with
// equal hashes are ordered by owner.
type ringHash struct {
	rand             *rand.Rand
	weights          []float64 // by endpoint id
	minRing, maxRing int

	// Guarded by the Balancer's mutex.
	set     hostSet
	ring    ring
	builder ringBuilder
}

var (
	_ Picker       = (*ringHash)(nil)
	_ HostsUpdater = (*ringHash)(nil)
)

// UpdateHosts records the host set; the ring follows at the next pick with a
// key.
func (p *ringHash) UpdateHosts(hosts []int) { p.set.update(hosts) }

func (p *ringHash) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if !req.HasKey {
		return hosts[p.rand.IntN(len(hosts))], noDone
	}
	if p.set.rebuild() {
		p.builder.build(&p.ring, p.set.ids, p.weights, p.minRing, p.maxRing)
	}
	return int(p.ring.owners[p.ring.lookup(hashKey(req.Key))]), noDone
}

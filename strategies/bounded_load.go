package strategies

import (
	"math"
	"math/rand/v2"
)

// DefaultBoundedLoadFactor is the default balance factor of bounded-load:
// the paper's example c = 1.25, Envoy's hash_balance_factor 125.
const DefaultBoundedLoadFactor = 1.25

func init() {
	registerBase("bounded-load", []string{"factor", "min_ring"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		factor, err := floatParam(params, "factor", DefaultBoundedLoadFactor, 1, 1e6)
		if err != nil {
			return nil, err
		}
		minRing, maxRing, err := ringSizeParams(params, "")
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return newBoundedLoad(env, factor, minRing, maxRing)
		}, nil
	})
}

// boundedLoad is consistent hashing with bounded loads (Mirrokni, Thorup and
// Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018), on the
// ring of ring-hash: a request's home is the owner of the first point
// clockwise from the hash of its key, but a host may hold at most
//
//	capacity(h) = max(1, ceil(factor · (T + 1) · w_h / W))
//
// requests, where T is the number of requests in flight to the given hosts
// (the Balancer's counters), the + 1 counts the new request, w_h is the
// host's weight and W the sum of the given hosts' weights; with equal
// weights this is ceil(factor · (T+1) / n). A request goes to its home when
// the home holds fewer than its capacity, and otherwise walks clockwise
// along the ring to the first point whose owner does. The walk ends: the
// capacities add up to at least factor · (T+1) > T, so some host has room,
// and every host has a point on the ring unless max_ring binds. Should no
// host on the ring have room (only when some host has no point), the request
// goes to the host with the least in flight relative to its capacity.
//
// Parameters: factor (default 1.25, in [1, 1e6]) is the paper's c and
// Envoy's hash_balance_factor / 100; the smaller, the more evenly loaded the
// hosts and the more keys leave their home. min_ring (default 1024, in
// [1, 8388608]) is the ring's minimum size as in ring-hash; the maximum is
// 8388608. The ring is rebuilt when the host set changes, as in ring-hash.
//
// A request without a key gets a home drawn uniformly at random from the
// given hosts and, if that host is full, walks the ring from one of its
// points.
//
// T is kept up to date without a scan: it is recomputed from the
// Balancer's counters when the host set changes, incremented at every pick
// and decremented when a request to one of the current hosts is done. The
// done of a pick is one of N closures made at construction, so picks do not
// allocate.
//
// Deviations from Envoy's bounded-load hashing (hash_balance_factor):
//   - a full home is left by walking the ring clockwise, as in the paper;
//     Envoy probes the hosts in a random order seeded by the hash, which
//     avoids cascades of overflow onto the same neighbour (Chen et al. 2019);
//   - a host takes the request only while it holds fewer than its
//     capacity, so no pick leaves it above its capacity, as in the paper
//     (capacities shrink as requests end, so a host may still hold more
//     than the current one from picks made under a larger total); Envoy
//     takes it while the host holds at most its capacity
//     (slots = ceil(ceil((T+1)·factor) · w_h/W)), so a host may reach one
//     more;
//   - T counts the requests in flight to the given hosts; Envoy counts the
//     cluster's active requests, including those to hosts that are not
//     currently eligible;
//   - a request without a key gets a uniformly random home; Envoy hashes a
//     random number, so its home follows the ring's shares (and weights);
//   - the capacity is computed in floating point and rounded up with a
//     relative tolerance of 1e-9, so that rounding error cannot turn an
//     exact integer into the next one.
type boundedLoad struct {
	rand     *rand.Rand
	weights  []float64 // by endpoint id
	inflight []int64   // by endpoint id; maintained by the Balancer
	factor   float64
	minRing  int
	maxRing  int
	dones    []func(Outcome) // by endpoint id: decrements total if a member

	// Guarded by the Balancer's mutex.
	set       hostSet
	ring      ring
	builder   ringBuilder
	member    []bool  // by endpoint id: in the current set
	first     []int32 // by endpoint id: index of one of its points, -1 if none
	weightSum float64 // of the current set
	equal     bool    // every host of the current set has the same weight
	total     int64   // requests in flight to the current set
}

var (
	_ Picker       = (*boundedLoad)(nil)
	_ HostsUpdater = (*boundedLoad)(nil)
)

func newBoundedLoad(env *buildEnv, factor float64, minRing, maxRing int) *boundedLoad {
	p := &boundedLoad{
		rand:     env.rand,
		weights:  env.weights,
		inflight: env.inflight,
		factor:   factor,
		minRing:  minRing,
		maxRing:  maxRing,
		dones:    make([]func(Outcome), env.n),
		member:   make([]bool, env.n),
		first:    make([]int32, env.n),
	}
	for ep := range p.dones {
		p.dones[ep] = func(Outcome) {
			if p.member[ep] {
				p.total--
			}
		}
	}
	return p
}

// UpdateHosts records the host set; the ring and the per-set state follow
// at the next pick.
func (p *boundedLoad) UpdateHosts(hosts []int) { p.set.update(hosts) }

func (p *boundedLoad) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if p.set.rebuild() {
		p.rebuild()
	}
	var ep int
	if req.HasKey {
		ep = p.walk(p.ring.lookup(hashKey(req.Key)))
	} else {
		ep = hosts[p.rand.IntN(len(hosts))]
		if !p.hasRoom(ep, p.perWeight()) {
			start := int(p.first[ep])
			if start < 0 {
				start = p.rand.IntN(len(p.ring.owners))
			}
			ep = p.walk(start)
		}
	}
	p.total++
	return ep, p.dones[ep]
}

// rebuild rebuilds the ring and the per-set state for p.set.ids.
func (p *boundedLoad) rebuild() {
	ids := p.set.ids
	p.builder.build(&p.ring, ids, p.weights, p.minRing, p.maxRing)
	clear(p.member)
	p.total, p.weightSum, p.equal = 0, 0, true
	for _, id := range ids {
		p.member[id] = true
		p.first[id] = -1
		p.total += p.inflight[id]
		p.weightSum += p.weights[id]
		p.equal = p.equal && p.weights[id] == p.weights[ids[0]]
	}
	for i, owner := range p.ring.owners {
		if p.first[owner] < 0 {
			p.first[owner] = int32(i)
		}
	}
}

// perWeight is factor · (T+1) / W: a host's capacity before rounding is
// this times its weight.
func (p *boundedLoad) perWeight() float64 {
	return p.factor * float64(p.total+1) / p.weightSum
}

// capacity is the most requests host ep may hold, counting the new one.
func (p *boundedLoad) capacity(ep int, perWeight float64) int64 {
	c := math.Ceil(perWeight * p.weights[ep] * (1 - 1e-9))
	return max(1, int64(c))
}

func (p *boundedLoad) hasRoom(ep int, perWeight float64) bool {
	return p.inflight[ep] < p.capacity(ep, perWeight)
}

// walk returns the owner of the first point from index start on, clockwise,
// whose owner has room; when none has, the least loaded owner relative to
// its capacity.
func (p *boundedLoad) walk(start int) int {
	owners := p.ring.owners
	perWeight := p.perWeight()
	if p.equal {
		// One capacity for every host.
		limit := p.capacity(int(owners[start]), perWeight)
		least, leastLoad := -1, int64(math.MaxInt64)
		for i, idx := 0, start; i < len(owners); i++ {
			ep := int(owners[idx])
			n := p.inflight[ep]
			if n < limit {
				return ep
			}
			if n < leastLoad {
				least, leastLoad = ep, n
			}
			if idx++; idx == len(owners) {
				idx = 0
			}
		}
		return least
	}
	least, leastRatio := -1, math.Inf(1)
	for i, idx := 0, start; i < len(owners); i++ {
		ep := int(owners[idx])
		n, c := p.inflight[ep], p.capacity(ep, perWeight)
		if n < c {
			return ep
		}
		if r := float64(n) / float64(c); r < leastRatio {
			least, leastRatio = ep, r
		}
		if idx++; idx == len(owners) {
			idx = 0
		}
	}
	return least
}

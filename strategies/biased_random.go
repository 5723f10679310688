package strategies

import (
	"math/bits"
	"math/rand/v2"
)

func init() {
	registerBase("biased-random", nil, noParams(func(env *buildEnv) Picker {
		return &biasedRandom{rand: env.rand, inflight: env.inflight}
	}))
}

// biasedRandom is the load-biased random choice of the seed article on load
// balancing algorithms: every given host starts from the same base
// probability 1/N, scaled by its bias B = (1 - load/max_load)^2, where load
// is its requests in flight from this Balancer and max_load the largest
// load among the given hosts; the pick is random with probability
// proportional to B. The busiest hosts get nothing and lightly loaded ones
// most of the traffic, the quadratic making the preference sharper than a
// linear one. When max_load is 0, or every given host is at max_load (every
// B is 0), it picks uniformly. It takes no parameters and ignores weights.
//
// B is clamped at 0 in the article; here no load exceeds max_load, so it
// never goes below. The probabilities are computed exactly in integers:
// B is proportional to (max_load - load)^2 and one integer draw below the
// sum of those picks the host. Loads above 2^20 are scaled down (by a power
// of two) first, so that the sum cannot overflow.
//
// Each pick reads the load of every given host, O(n), as least-inflight
// does: a change of max_load changes every B, and the loads are the
// Balancer's counters, of whose changes the picker hears only through its
// own picks and dones, so an incremental structure would have to keep its
// own counts and could drift from them.
type biasedRandom struct {
	rand     *rand.Rand
	inflight []int64 // by endpoint id; maintained by the Balancer
}

var _ Picker = (*biasedRandom)(nil)

// biasedRandomExactBits bounds the bits of a scaled load difference, so
// that the sum of the squares of up to 2^23 hosts fits in a uint64.
const biasedRandomExactBits = 20

func (b *biasedRandom) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	n := len(hosts)
	if n == 1 {
		return hosts[0], noDone
	}
	var maxLoad int64
	for _, h := range hosts {
		maxLoad = max(maxLoad, b.inflight[h])
	}
	if maxLoad == 0 {
		return hosts[b.rand.IntN(n)], noDone
	}
	shift := max(0, bits.Len64(uint64(maxLoad))-biasedRandomExactBits)
	var total uint64
	for _, h := range hosts {
		d := uint64(maxLoad-b.inflight[h]) >> shift
		total += d * d
	}
	if total == 0 {
		return hosts[b.rand.IntN(n)], noDone
	}
	return b.locate(hosts, maxLoad, shift, b.rand.Uint64N(total)), noDone
}

// locate returns the host whose share of [0, total) holds u: the hosts
// take consecutive intervals of length ((maxLoad - load) >> shift)^2, in
// the order given.
func (b *biasedRandom) locate(hosts []int, maxLoad int64, shift int, u uint64) int {
	for _, h := range hosts {
		d := uint64(maxLoad-b.inflight[h]) >> shift
		sq := d * d
		if u < sq {
			return h
		}
		u -= sq
	}
	panic("unreachable: the draw is below the sum of the biases")
}

package strategies

import "math/rand/v2"

func init() {
	registerBase("p2c", nil, noParams(func(env *buildEnv) Picker {
		return &p2c{rand: env.rand, inflight: env.inflight}
	}))
}

// p2c is the power of two random choices (Mitzenmacher 1996; Azar, Broder,
// Karlin and Upfal 1999): draw two distinct hosts uniformly at random and
// pick the one with fewer requests in flight from this Balancer. With a
// single host it picks that host. A tie goes to the first draw: the order of
// the two draws is itself uniformly random, so this is a fair coin flip
// without drawing another number. This is Envoy's least_request with equal
// weights and choice_count 2, and nginx's "random two least_conn", except
// that Envoy may draw the same host twice.
type p2c struct {
	rand     *rand.Rand
	inflight []int64 // indexed by endpoint id; maintained by the caller
}

var _ Picker = (*p2c)(nil)

func (p *p2c) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	n := len(hosts)
	if n == 1 {
		return hosts[0], noDone
	}
	i := p.rand.IntN(n)
	j := p.rand.IntN(n - 1)
	if j >= i {
		j++
	}
	a, b := hosts[i], hosts[j]
	// The comparison is a coin flip to the CPU; written as a select, the
	// compiler makes it a conditional move instead of a branch it would
	// mispredict half the time.
	if p.inflight[b] < p.inflight[a] {
		a = b
	}
	return a, noDone
}

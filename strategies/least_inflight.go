package strategies

import "math/rand/v2"

func init() {
	registerBase("least-inflight", nil, noParams(func(env *buildEnv) Picker {
		return &leastInflight{rand: env.rand, inflight: env.inflight}
	}))
}

// leastInflight picks the host with the fewest requests in flight from this
// Balancer, scanning every given host (Envoy's least_request in full-scan
// mode, nginx's least_conn without weights). Ties are broken uniformly at
// random: a first pass finds the least count and how many hosts share it, a
// second takes the k-th of them for one uniform draw k, so every tie is
// chosen with probability 1/(number of ties) whatever the order of hosts,
// at the cost of one random number per pick rather than one per tie.
//
// nginx breaks ties by weighted round robin instead; a random tie-break
// avoids sending every request of a burst to the lowest id.
//
// A host that fails fast looks lightly loaded and attracts traffic; pair it
// with the eject wrapper to counter that.
type leastInflight struct {
	rand     *rand.Rand
	inflight []int64 // indexed by endpoint id; maintained by the caller
}

var _ Picker = (*leastInflight)(nil)

func (l *leastInflight) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	// First pass: the least count and how many hosts share it.
	least := l.inflight[hosts[0]]
	ties := 1
	for _, h := range hosts[1:] {
		switch n := l.inflight[h]; {
		case n < least:
			least, ties = n, 1
		case n == least:
			ties++
		}
	}
	if ties == 1 {
		for _, h := range hosts {
			if l.inflight[h] == least {
				return h, noDone
			}
		}
	}
	// Second pass: the k-th tied host, k uniform in [0, ties).
	k := l.rand.IntN(ties)
	for _, h := range hosts {
		if l.inflight[h] == least {
			if k == 0 {
				return h, noDone
			}
			k--
		}
	}
	panic("unreachable: a tied host was counted but not found")
}

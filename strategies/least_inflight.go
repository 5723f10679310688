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
// random by reservoir sampling over the tied hosts: the k-th tie seen
// replaces the current choice with probability 1/k, so every tie is chosen
// with probability 1/(number of ties) whatever the order of hosts.
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
	best := hosts[0]
	least := l.inflight[best]
	ties := 1
	for _, h := range hosts[1:] {
		switch n := l.inflight[h]; {
		case n < least:
			best, least, ties = h, n, 1
		case n == least:
			ties++
			if l.rand.IntN(ties) == 0 {
				best = h
			}
		}
	}
	return best, noDone
}

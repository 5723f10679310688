package strategies

import (
	"fmt"
	"math/rand/v2"
)

func init() {
	registerBase("least-inflight", []string{"ties"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		first := false
		switch v, ok := params["ties"]; {
		case !ok || v == "random":
		case v == "first":
			first = true
		default:
			return nil, fmt.Errorf("ties: want random or first, got %q", v)
		}
		return func(env *buildEnv) Picker {
			return &leastInflight{rand: env.rand, inflight: env.inflight, first: first}
		}, nil
	})
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
// avoids sending every request of a burst to the lowest id. With
// ties=first (default ties=random) the lowest endpoint id among the ties
// wins, as many simple implementations do (the first of a scan in id
// order): every replica then agrees on the same host while counts are
// equal, which is how a deterministic tie-break makes independent
// balancers move in step.
//
// A host that fails fast looks lightly loaded and attracts traffic; pair it
// with the eject wrapper to counter that.
type leastInflight struct {
	rand     *rand.Rand
	inflight []int64 // indexed by endpoint id; maintained by the caller
	first    bool    // ties go to the lowest endpoint id
}

var _ Picker = (*leastInflight)(nil)

func (l *leastInflight) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	if l.first {
		return leastLoadedFirst(hosts, l.inflight), noDone
	}
	return leastLoaded(hosts, l.inflight, l.rand), noDone
}

// leastLoadedFirst returns the host with the least load and, among ties,
// the lowest endpoint id, whatever the order of hosts.
func leastLoadedFirst(hosts []int, loads []int64) int {
	best := hosts[0]
	for _, h := range hosts[1:] {
		if n := loads[h]; n < loads[best] || n == loads[best] && h < best {
			best = h
		}
	}
	return best
}

// leastLoaded returns a host with the least load (loads indexed by endpoint
// id: in-flight counts, average latencies, forecasts), ties broken uniformly at random whatever the order of hosts: a first
// pass finds the least load and how many hosts share it, a second takes the
// k-th of them for one uniform draw k, so a pick costs one random number at
// most rather than one per tie.
func leastLoaded[T int64 | float64](hosts []int, loads []T, r *rand.Rand) int {
	least, ties := loads[hosts[0]], 1
	for _, h := range hosts[1:] {
		switch n := loads[h]; {
		case n < least:
			least, ties = n, 1
		case n == least:
			ties++
		}
	}
	k := 0
	if ties > 1 {
		k = r.IntN(ties)
	}
	for _, h := range hosts {
		if loads[h] == least {
			if k == 0 {
				return h
			}
			k--
		}
	}
	panic("unreachable: a host with the least load was counted but not found")
}

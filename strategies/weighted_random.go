package strategies

import "math/rand/v2"

func init() {
	registerBase("weighted-random", nil, noParams(func(env *buildEnv) Picker {
		return &weightedRandom{rand: env.rand, weights: env.weights}
	}))
}

// weightedRandom picks a given host at random with probability proportional
// to its configured weight (Env.Weights), as nginx's "random" (without
// "two") does; Envoy's RANDOM policy ignores weights. It takes no
// parameters.
//
// One uniform draw per pick. When the given hosts' weights differ it scans a
// table of the cumulative weights of the hosts, in the order given, by binary
// search, O(log n); the table is rebuilt in O(n) when the hosts change
// (UpdateHosts). When they are all equal
// it draws a uniform index without a table. A weight below the float
// resolution of the total (some 1e-16 of it) gets no share.
type weightedRandom struct {
	rand    *rand.Rand
	weights []float64 // by endpoint id; immutable

	// Derived from the hosts of the latest UpdateHosts: whether their
	// weights are all equal and, when not, the running sums of their
	// weights in the order given; cum[len-1] is the total.
	equal bool
	cum   []float64
}

var (
	_ Picker       = (*weightedRandom)(nil)
	_ HostsUpdater = (*weightedRandom)(nil)
)

func (w *weightedRandom) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	n := len(hosts)
	if w.equal {
		if n == 1 {
			return hosts[0], noDone
		}
		return hosts[w.rand.IntN(n)], noDone
	}
	return hosts[w.locate(w.rand.Float64()*w.cum[n-1])], noDone
}

// locate returns the index of the first host whose running sum of weights
// exceeds u, for u in [0, total); should rounding make u equal to the
// total, the last host takes it.
func (w *weightedRandom) locate(u float64) int {
	lo, hi := 0, len(w.cum)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if w.cum[mid] > u {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// UpdateHosts notes whether the weights of hosts are equal and, if not,
// builds the running sums of their weights.
func (w *weightedRandom) UpdateHosts(hosts []int) {
	w.equal = weightsUniformOver(w.weights, hosts)
	if w.equal {
		return
	}
	// The slice is ours alone, so it is reused when large enough.
	w.cum = w.cum[:0]
	var sum float64
	for _, h := range hosts {
		sum += w.weights[h]
		w.cum = append(w.cum, sum)
	}
}

// weightsUniformOver reports whether every host of hosts has the same
// weight.
func weightsUniformOver(weights []float64, hosts []int) bool {
	first := weights[hosts[0]]
	for _, h := range hosts[1:] {
		if weights[h] != first {
			return false
		}
	}
	return true
}

package strategies

import "slices"

func init() {
	registerBase("weighted-round-robin", nil, noParams(func(env *buildEnv) Picker {
		return newWeightedRoundRobin(env.weights)
	}))
}

// weightedRoundRobin is nginx's smooth weighted round robin over the
// endpoints' configured weights (Env.Weights; float weights are allowed).
// Every endpoint has a current weight, 0 at the start. On every pick each
// given host's current weight grows by its weight, the host with the largest
// current weight is picked, and the sum of the given hosts' weights is
// subtracted from the picked host's current weight. Over any stretch of
// picks with an unchanged host set, each host is picked in proportion to
// its weight and the picks are interleaved: weights {A:5, B:1, C:1} give
// A A B A C A A, repeating, rather than a burst of five A's. With equal
// weights it is plain round robin in ascending id order. It takes no
// parameters.
//
// Ties go to the lowest endpoint id, whatever the order of hosts; nginx
// takes the first server of its configuration, which is the same when the
// servers are listed in id order. The sum of the weights is computed in id
// order and cached per host set, so the float arithmetic, and with it the
// sequence, does not depend on the order of hosts either.
//
// Host set changes follow nginx's treatment of servers that are down
// (failed or marked down): a host that is not given is skipped entirely,
// its current weight neither grows nor shrinks, and the total subtracted
// from the pick counts only the given hosts. When it is given again (an
// ejection ends, SetHosts brings it back) it resumes with the current
// weight it had, so one that left with a lead over the others keeps it and
// one that was just picked waits its turn; an endpoint never given before
// starts at 0.
//
// With equal weights among the given hosts the current weights all grow
// alike, so rather than adding the weight to each, a pick counts the
// picks made (lag) and keeps the hosts in a heap on their current weights
// less lag times the weight; the current weights are brought up to date
// when the host set changes and every 2^20 picks. That makes a pick
// O(log n); with unequal weights it visits every given host, O(n), as
// nginx's does.
//
// Deviation from nginx: its per-server effective weight, which drops after
// a failure and recovers by one per pick, is not modelled; failures are
// the business of wrappers such as eject.
type weightedRoundRobin struct {
	weights []float64 // by endpoint id; immutable
	// current weight by endpoint id; for the hosts in heap, less lag times
	// their weight.
	current []float64

	// Derived from set, the hosts of the latest UpdateHosts with more than
	// one host, ascending: the sum of their weights and whether the weights
	// are all equal. next is scratch for the following set.
	set   []int
	next  []int
	total float64
	equal bool

	// While the weights are equal: the given hosts as a binary max-heap on
	// (current, -id), the picks since the current weights were brought up
	// to date, and after how many picks to do that.
	heap   []int
	lag    float64
	settle float64
}

var (
	_ Picker       = (*weightedRoundRobin)(nil)
	_ HostsUpdater = (*weightedRoundRobin)(nil)
)

// wrrSettleEvery bounds the lag, so that the current weights of the hosts in
// the heap keep their precision.
const wrrSettleEvery = 1 << 20

func newWeightedRoundRobin(weights []float64) *weightedRoundRobin {
	return &weightedRoundRobin{weights: weights, current: make([]float64, len(weights)), settle: wrrSettleEvery}
}

func (w *weightedRoundRobin) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	if len(hosts) == 1 {
		// Adding the weight and subtracting the same total leaves the
		// current weight as it was.
		return hosts[0], noDone
	}
	if w.equal {
		return w.pickEqual(), noDone
	}
	best := -1
	var bestCur float64
	for _, h := range hosts {
		c := w.current[h] + w.weights[h]
		w.current[h] = c
		if best < 0 || c > bestCur || c == bestCur && h < best {
			best, bestCur = h, c
		}
	}
	w.current[best] = bestCur - w.total
	return best, noDone
}

// pickEqual picks the top of the heap. Every given host's current weight
// grows by the same weight, which is deferred by counting the pick in lag.
func (w *weightedRoundRobin) pickEqual() int {
	h := w.heap[0]
	w.current[h] -= w.total
	w.down(0)
	if w.lag++; w.lag >= w.settle {
		w.catchUp()
		for i := len(w.heap)/2 - 1; i >= 0; i-- {
			w.down(i)
		}
	}
	return h
}

// catchUp brings the current weights of the hosts in the heap up to date.
func (w *weightedRoundRobin) catchUp() {
	if w.lag != 0 {
		for _, h := range w.heap {
			w.current[h] += w.lag * w.weights[h]
		}
		w.lag = 0
	}
}

// UpdateHosts adapts to a new host set: it caches the total weight of
// hosts, summed in ascending id order, and whether their weights are equal,
// in which case it fills the heap with them. A lone host changes nothing,
// since Pick passes it without touching any state, so after one the hosts
// before it resume where they were if they come back unchanged.
func (w *weightedRoundRobin) UpdateHosts(hosts []int) {
	if len(hosts) == 1 {
		return
	}
	w.next = append(w.next[:0], hosts...)
	if !slices.IsSorted(w.next) {
		slices.Sort(w.next)
	}
	if slices.Equal(w.next, w.set) {
		return
	}
	w.set, w.next = w.next, w.set
	w.catchUp()
	var total float64
	for _, h := range w.set {
		total += w.weights[h]
	}
	w.total = total
	w.equal = weightsUniformOver(w.weights, w.set)
	w.heap = w.heap[:0]
	if w.equal {
		w.heap = append(w.heap, w.set...)
		for i := len(w.heap)/2 - 1; i >= 0; i-- {
			w.down(i)
		}
	}
}

// ahead reports whether endpoint a is picked before endpoint b: a larger
// current weight, or the same and a lower id.
func (w *weightedRoundRobin) ahead(a, b int) bool {
	if ca, cb := w.current[a], w.current[b]; ca != cb {
		return ca > cb
	}
	return a < b
}

// down restores the heap order below position i.
func (w *weightedRoundRobin) down(i int) { siftDown(w.heap, i, w.ahead) }

package strategies

import (
	"math"
	"math/rand/v2"
)

// Defaults of least-request, those of Envoy's least_request.
const (
	DefaultLeastRequestChoices = 2
	DefaultLeastRequestBias    = 1.0
)

func init() {
	registerBase("least-request", []string{"choice_count", "active_request_bias", "full_scan"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		choices, err := intParam(params, "choice_count", DefaultLeastRequestChoices, 1)
		if err != nil {
			return nil, err
		}
		bias, err := floatParam(params, "active_request_bias", DefaultLeastRequestBias, 0, 10)
		if err != nil {
			return nil, err
		}
		fullScan, err := boolParam(params, "full_scan", false)
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return newLeastRequest(env.rand, env.inflight, env.weights, choices, bias, fullScan)
		}, nil
	})
}

// leastRequest is Envoy's least_request load balancer. Parameters:
// choice_count (default 2, >= 1), active_request_bias (default 1.0, in
// [0, 10]) and full_scan (default false). The load of a host is its
// requests in flight from this Balancer. Whether the configured weights
// (Env.Weights) are equal is judged over the given hosts, as Envoy judges
// it per host set, so ejecting the only host with a different weight
// switches from the schedule to the random draws.
//
// When the given hosts' weights are all equal it draws choice_count hosts
// uniformly at random, with replacement as Envoy does, and picks the one
// with the fewest requests in flight; a tie goes to the earliest draw,
// which by the symmetry of the draws is a uniformly random one of the tied
// hosts drawn. So choice_count 1 is plain random, a host may be drawn more
// than once (with two hosts and two choices the busier one still gets a
// quarter of the picks, unlike p2c, which draws two distinct hosts), and a
// choice_count above the number of hosts is not a full scan. With
// full_scan=true it scans every given host instead and picks one of those
// with the fewest in flight uniformly at random (one draw per pick rather
// than Envoy's reservoir sampling, with the same distribution), O(n).
//
// When the weights differ it is Envoy's earliest-deadline-first schedule
// with the effective weight weight / (in flight + 1)^active_request_bias:
// every given host has a deadline in a virtual time, the host with the
// earliest deadline is picked, the virtual time moves to that deadline,
// and the host's next deadline is that time plus 1 / its effective weight,
// with its requests in flight counted before this pick (the Balancer counts
// the pick after Pick returns, as Envoy's active-request counter does). A
// busy host thus comes round less often, but never drops out; with
// active_request_bias 0 it is a weighted round robin with interleaved
// picks, though not in nginx's exact sequence. Ties go to the host
// scheduled first (Envoy's FIFO order), then to the lowest id, so the
// schedule does not depend on the order of hosts. choice_count and
// full_scan do not apply to this mode, as in Envoy. A pick is O(log n).
//
// As in Envoy, the effective weight is read for the picked host only, at
// its pick: a host whose requests finish, or pile up, after it was picked
// keeps the deadline it got until it is picked again, so the schedule lags
// the loads by up to one turn of each host.
//
// Deviations from Envoy:
//   - the schedule is not rebuilt on a host set change: Envoy discards it
//     when membership or health changes and schedules every host afresh
//     from its current effective weight, after a random number of picks so
//     that its workers do not all start alike; here hosts that stay keep
//     their deadlines, only a host that (re-)enters is scheduled afresh,
//     1 / its effective weight after the current virtual time, and the
//     first pick is deterministic;
//   - recent Envoy versions (behind a runtime flag) use the schedule even
//     with equal weights when active_request_bias is set explicitly; here
//     active_request_bias only matters when the weights differ, as Envoy
//     documents it;
//   - Envoy's choice_count must be at least 2; 1 is allowed here. Envoy
//     sets no upper bound on active_request_bias; 10 is the bound here.
type leastRequest struct {
	// Immutable after construction.
	rand     *rand.Rand
	inflight []int64   // by endpoint id; maintained by the Balancer
	weights  []float64 // by endpoint id
	choices  int
	bias     float64
	fullScan bool

	// Derived from the hosts of the latest UpdateHosts: whether their
	// weights are all equal.
	equal bool

	// The schedule, used while the weights of the given hosts differ.
	// heap holds the scheduled endpoints, a binary min-heap on (deadline,
	// seq, id); the other slices are by endpoint id.
	now      float64   // virtual time: the deadline of the latest pick
	deadline []float64 // next deadline of each scheduled endpoint
	seq      []uint64  // when each scheduled endpoint was (re)scheduled
	nextSeq  uint64
	queued   []bool   // whether each endpoint is in heap
	mark     []uint64 // scratch for refresh: gen when in the new host set
	gen      uint64
	heap     []int
}

var (
	_ Picker       = (*leastRequest)(nil)
	_ HostsUpdater = (*leastRequest)(nil)
)

func newLeastRequest(r *rand.Rand, inflight []int64, weights []float64, choices int, bias float64, fullScan bool) *leastRequest {
	n := len(weights)
	return &leastRequest{
		rand:     r,
		inflight: inflight,
		weights:  weights,
		choices:  choices,
		bias:     bias,
		fullScan: fullScan,
		deadline: make([]float64, n),
		seq:      make([]uint64, n),
		queued:   make([]bool, n),
		mark:     make([]uint64, n),
	}
}

func (l *leastRequest) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	switch {
	case len(hosts) == 1:
		return hosts[0], noDone
	case !l.equal:
		return l.pickScheduled(), noDone
	case l.fullScan:
		return leastLoaded(hosts, l.inflight, l.rand), noDone
	}
	n := len(hosts)
	best := hosts[l.rand.IntN(n)]
	for range l.choices - 1 {
		if h := hosts[l.rand.IntN(n)]; l.inflight[h] < l.inflight[best] {
			best = h
		}
	}
	return best, noDone
}

// pickScheduled picks the host with the earliest deadline and schedules it
// again at 1 / its effective weight from its deadline.
func (l *leastRequest) pickScheduled() int {
	h := l.heap[0]
	l.now = l.deadline[h]
	l.deadline[h] = l.now + 1/l.effectiveWeight(h)
	l.seq[h] = l.nextSeq
	l.nextSeq++
	l.down(0)
	return h
}

// effectiveWeight is weight / (in flight + 1)^bias.
func (l *leastRequest) effectiveWeight(h int) float64 {
	w := l.weights[h]
	switch a := float64(l.inflight[h]) + 1; l.bias {
	case 0:
		return w
	case 1:
		return w / a
	default:
		return w / math.Pow(a, l.bias)
	}
}

// UpdateHosts adapts to a new host set: it notes whether the weights are
// equal and, if not, schedules the hosts that were not scheduled, at 1 /
// their effective weight from the current virtual time, and unschedules
// those no longer given. Hosts that stay keep their deadlines. Hosts
// entering together share one seq, so ties among them go to the lowest id
// whatever the order of hosts.
func (l *leastRequest) UpdateHosts(hosts []int) {
	l.equal = len(hosts) == 1 || weightsUniformOver(l.weights, hosts)
	l.gen++
	if !l.equal {
		for _, h := range hosts {
			l.mark[h] = l.gen
		}
	}
	for _, h := range l.heap {
		if l.mark[h] != l.gen {
			l.queued[h] = false
		}
	}
	l.heap = l.heap[:0]
	if l.equal {
		return
	}
	entered := false
	for _, h := range hosts {
		if !l.queued[h] {
			l.queued[h] = true
			l.deadline[h] = l.now + 1/l.effectiveWeight(h)
			l.seq[h] = l.nextSeq
			entered = true
		}
		l.heap = append(l.heap, h)
	}
	if entered {
		l.nextSeq++
	}
	for i := len(l.heap)/2 - 1; i >= 0; i-- {
		l.down(i)
	}
}

// before reports whether endpoint a is due before endpoint b.
func (l *leastRequest) before(a, b int) bool {
	if da, db := l.deadline[a], l.deadline[b]; da != db {
		return da < db
	}
	if sa, sb := l.seq[a], l.seq[b]; sa != sb {
		return sa < sb
	}
	return a < b
}

// down restores the heap order below position i.
func (l *leastRequest) down(i int) { siftDown(l.heap, i, l.before) }

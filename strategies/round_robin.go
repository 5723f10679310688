package strategies

import "slices"

func init() {
	registerBase("round-robin", nil, noParams(func(*buildEnv) Picker { return newRoundRobin() }))
}

// roundRobin picks the hosts in ascending id order, cycling: the next pick is
// the smallest given id greater than the last pick, wrapping to the smallest
// id. When the host set changes (an endpoint is ejected or re-admitted) the
// cycle continues from the last pick rather than from a stored index, so no
// host gets a burst of consecutive picks. The first pick is the smallest id.
//
// Unlike grpc-go's round_robin, which starts at a random index, the start is
// fixed so that runs are repeatable without consuming randomness.
type roundRobin struct {
	last int // id of the last pick; -1 before the first
	idx  int // index of last in the hosts of the last pick; -1 before the first
}

var _ Picker = (*roundRobin)(nil)

func newRoundRobin() *roundRobin { return &roundRobin{last: -1, idx: -1} }

// Pick relies on hosts being ascending. It is O(1) while the host set stays
// the same and O(log n) after it changes.
func (r *roundRobin) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	i := r.idx + 1
	if r.idx < 0 || r.idx >= len(hosts) || hosts[r.idx] != r.last {
		i, _ = slices.BinarySearch(hosts, r.last+1)
	}
	if i >= len(hosts) {
		i = 0
	}
	r.idx, r.last = i, hosts[i]
	return r.last, noDone
}

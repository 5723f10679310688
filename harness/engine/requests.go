package engine

import (
	"sort"

	"github.com/lbchaos/lbchaos/experiments"
)

// RequestPicker chooses which of an experiment's requests the k-th request
// is. Like the keys, the choice depends only on the seed and k, so runs
// repeat and the real engine and the simulator agree.
type RequestPicker struct {
	n    int
	seed uint64
	cdf  []float64 // weighted: cumulative share of requests 0..n-1; nil = round-robin
}

// pickSalt separates the request choice from the key draws of the same
// seed.
const pickSalt = 0x2545f4914f6cdd1d

// NewRequestPicker returns the picker of reqs, drawn from seed: a targets
// file's requests in turn (k mod n, as Vegeta goes through its targets),
// an inline list's by weight. It returns nil when reqs is nil.
func NewRequestPicker(reqs *experiments.Requests, seed uint64) *RequestPicker {
	if reqs == nil || len(reqs.List) == 0 {
		return nil
	}
	p := &RequestPicker{n: len(reqs.List), seed: seed ^ pickSalt}
	if reqs.RoundRobin() {
		return p
	}
	p.cdf = make([]float64, p.n)
	var sum float64
	for i, r := range reqs.List {
		sum += r.Weight
		p.cdf[i] = sum
	}
	for i := range p.cdf {
		p.cdf[i] /= sum
	}
	return p
}

// Pick returns the index of request k in the experiment's list.
func (p *RequestPicker) Pick(k uint64) int {
	if p.cdf == nil {
		return int(k % uint64(p.n))
	}
	u := unit(splitmix(p.seed, k))
	// The first request whose cumulative share exceeds u.
	j := sort.Search(len(p.cdf), func(i int) bool { return p.cdf[i] > u })
	return min(j, p.n-1)
}

package strategies

import (
	"math"
	"math/rand/v2"
)

// Defaults of the server-load strategy: two choices on the reported load
// alone, as Uber does.
const (
	DefaultServerLoadChoiceCount = 2
	DefaultServerLoadInflight    = false
)

func init() {
	registerBase("server-load", []string{"choice_count", "inflight"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		count, err := sampledCountParam(params, "choice_count", DefaultServerLoadChoiceCount)
		if err != nil {
			return nil, err
		}
		inflight, err := boolParam(params, "inflight", DefaultServerLoadInflight)
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return newServerLoad(env.n, count, inflight, env.rand, env.inflight)
		}, nil
	})
}

// serverLoad is the "server-load" strategy: balancing on the load the
// backends report themselves. Each backend states in a response header
// (faultyserver.LoadHeader) how many other requests it holds or queues as
// it answers, which the harness passes as Outcome.Load with HasLoad set.
// Uber's balancers run two choices on such reported concurrency, which they
// found to work better than CPU readings.
//
// Per host the strategy remembers the last reported load, kept by endpoint
// id for the Balancer's lifetime (also while the endpoint is out of the
// host set); a host that never reported counts as 0. An outcome without
// HasLoad (an error, a timeout, a response without the header) leaves the
// value unchanged, and so does a report that is not a number (NaN). A pick
// draws choice_count (default 2) distinct hosts uniformly at random, or
// takes every host when choice_count is 0 or at least their number, and
// picks the least load, ties uniformly at random. With inflight=true
// (default false) the load is the report plus this Balancer's requests in
// flight to the host, which Netflix's edge combines with the report
// (Netflix also weighs in the host's error rate, which this strategy does
// not).
//
// The report is stale between responses: it is the backend's state when
// it answered the last request this Balancer sent it, and says nothing
// about what other clients or this one sent since. A host picked rarely,
// or one whose requests fail without a header, keeps an old value, low or
// high; inflight=true corrects it with this Balancer's own share. With
// inflight=false and full scan, every pick until the next report goes to
// the hosts of least report. A host that fails fast without reporting
// keeps its last, possibly low, load and keeps attracting traffic.
type serverLoad struct {
	// Immutable after construction.
	addInflight bool
	inflight    []int64         // indexed by endpoint id; maintained by the Balancer
	dones       []func(Outcome) // per endpoint, so that a pick allocates nothing

	// Mutable; the Balancer's mutex guards it.
	reported []float64 // last reported load, indexed by endpoint id
	choose   sampledMin
}

var _ Picker = (*serverLoad)(nil)

func newServerLoad(n, count int, addInflight bool, r *rand.Rand, inflight []int64) *serverLoad {
	s := &serverLoad{
		addInflight: addInflight,
		inflight:    inflight,
		dones:       make([]func(Outcome), n),
		reported:    make([]float64, n),
	}
	for ep := range s.dones {
		s.dones[ep] = func(o Outcome) { s.observe(ep, o) }
	}
	s.choose = sampledMin{rand: r, count: count, load: s.load}
	return s
}

func (s *serverLoad) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	ep := s.choose.pick(hosts)
	return ep, s.dones[ep]
}

// load is the last load ep reported, plus its requests in flight with
// inflight=true.
func (s *serverLoad) load(ep int) float64 {
	if s.addInflight {
		return s.reported[ep] + float64(s.inflight[ep])
	}
	return s.reported[ep]
}

// observe records the load reported with one outcome of ep.
func (s *serverLoad) observe(ep int, o Outcome) {
	if o.HasLoad && !math.IsNaN(o.Load) {
		s.reported[ep] = o.Load
	}
}

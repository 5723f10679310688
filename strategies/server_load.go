package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of the server-load strategy: two choices on the reported load
// alone, as Uber does.
const (
	DefaultServerLoadChoiceCount = 2
	DefaultServerLoadInflight    = false
	// MinServerLoadReportInterval bounds report_interval from below: the
	// engines poll every instance's control API that often.
	MinServerLoadReportInterval = 10 * time.Millisecond
)

func init() {
	registerBase("server-load", []string{"choice_count", "inflight", "report_interval"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		count, err := sampledCountParam(params, "choice_count", DefaultServerLoadChoiceCount)
		if err != nil {
			return nil, err
		}
		inflight, err := boolParam(params, "inflight", DefaultServerLoadInflight)
		if err != nil {
			return nil, err
		}
		interval, err := reportIntervalParam(params, "report_interval")
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			s := newServerLoad(env.n, count, inflight, env.rand, env.inflight)
			if interval == 0 {
				return s
			}
			s.shared = env.loads
			return &polledServerLoad{serverLoad: s, interval: interval}
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
//
// With report_interval (a duration of at least 10ms; none by default) the
// load comes not from responses but from a shared, periodically refreshed
// signal (Env.Loads): every report_interval whoever runs the strategy reads
// every instance's load (the number LoadHeader carries: requests holding a
// worker or queued) and hands the same snapshot to every replica, as a
// registry, a metrics pipeline or a polled endpoint would. Per-response
// loads are then ignored. Before the first snapshot every host counts as 0.
// The signal is stale for everyone at once: with full scan
// (choice_count=0) every replica sends everything to the least loaded host
// of the snapshot until the next refresh: the herding that the herd
// scenario's source and Netflix describe for balancers acting on the same
// delayed load information. Two choices spread the same picks over the
// better half. Unlike Netflix's balancers this uses the snapshot alone (no
// error rate, no smoothing).
type serverLoad struct {
	// Immutable after construction.
	addInflight bool
	inflight    []int64         // indexed by endpoint id; maintained by the Balancer
	dones       []func(Outcome) // per endpoint, so that a pick allocates nothing

	shared LoadSource // nil: loads come with responses

	// Mutable; the Balancer's mutex guards it.
	reported []float64 // last reported load, indexed by endpoint id
	snap     []float64 // with shared: the snapshot of the current Pick; nil before the first
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
	if s.shared != nil {
		s.snap, _ = s.shared.Snapshot()
	}
	ep := s.choose.pick(hosts)
	return ep, s.dones[ep]
}

// load is the last load ep reported (with a shared signal, its load in the
// current snapshot), plus its requests in flight with inflight=true.
func (s *serverLoad) load(ep int) float64 {
	var l float64
	switch {
	case s.shared == nil:
		l = s.reported[ep]
	case ep < len(s.snap) && !math.IsNaN(s.snap[ep]):
		l = s.snap[ep]
	}
	if s.addInflight {
		l += float64(s.inflight[ep])
	}
	return l
}

// observe records the load reported with one outcome of ep; with a shared
// signal it ignores it.
func (s *serverLoad) observe(ep int, o Outcome) {
	if s.shared == nil && o.HasLoad && !math.IsNaN(o.Load) {
		s.reported[ep] = o.Load
	}
}

// polledServerLoad is server-load with report_interval: a serverLoad on the
// shared signal that tells the Balancer how often to refresh it.
type polledServerLoad struct {
	*serverLoad
	interval time.Duration
}

var _ LoadReader = (*polledServerLoad)(nil)

// LoadReportInterval implements LoadReader.
func (p *polledServerLoad) LoadReportInterval() time.Duration { return p.interval }

// reportIntervalParam reads report_interval: absent (0, loads come with
// responses) or a duration of at least MinServerLoadReportInterval.
func reportIntervalParam(params map[string]string, key string) (time.Duration, error) {
	if _, ok := params[key]; !ok {
		return 0, nil
	}
	d, err := durationParam(params, key, 0)
	if err != nil {
		return 0, err
	}
	if d < MinServerLoadReportInterval {
		return 0, fmt.Errorf("%s: want at least %v (every instance is polled that often), got %q", key, MinServerLoadReportInterval, params[key])
	}
	return d, nil
}

package strategies

import (
	"sync/atomic"
	"time"
)

// LoadSource is a shared, periodically refreshed view of every endpoint's
// load, as production balancers read it from a registry, a metrics
// pipeline or a polled endpoint rather than from each response. Every
// replica of a strategy is given the same source (Env.Loads), so between
// two refreshes they all see the same, increasingly stale, numbers.
//
// Snapshot returns the latest loads, indexed by endpoint id (len N), and
// their version: 0 and nil before the first refresh, then increasing by one
// per refresh. The slice is read-only and stays valid (it is never
// written again). Snapshot is safe for concurrent use.
type LoadSource interface {
	Snapshot() (loads []float64, version uint64)
}

// LoadReader is implemented by Pickers that read a LoadSource: whoever runs
// the Balancer refreshes Env.Loads every LoadReportInterval (see
// Balancer.LoadReports), as it sends a Prober's probes.
type LoadReader interface {
	LoadReportInterval() time.Duration
}

// LoadBoard is the LoadSource that the engines fill: one per strategy run
// (per process), shared by every replica, published to by one poller.
type LoadBoard struct {
	cur atomic.Pointer[loadSnapshot]
}

type loadSnapshot struct {
	loads   []float64
	version uint64
}

var _ LoadSource = (*LoadBoard)(nil)

// NewLoadBoard returns a board with no snapshot yet.
func NewLoadBoard() *LoadBoard { return &LoadBoard{} }

// Snapshot implements LoadSource.
func (b *LoadBoard) Snapshot() ([]float64, uint64) {
	s := b.cur.Load()
	if s == nil {
		return nil, 0
	}
	return s.loads, s.version
}

// Publish makes a copy of loads the current snapshot, with the next
// version. Publish calls must not run concurrently with each other (one
// poller publishes); Snapshot may run concurrently with Publish.
func (b *LoadBoard) Publish(loads []float64) {
	var v uint64 = 1
	if s := b.cur.Load(); s != nil {
		v = s.version + 1
	}
	b.cur.Store(&loadSnapshot{loads: append([]float64(nil), loads...), version: v})
}

// LoadReports returns the interval at which whoever runs the Balancer must
// refresh Env.Loads, and false when no Picker of the strategy reads it.
func (b *Balancer) LoadReports() (time.Duration, bool) {
	if len(b.loadReaders) == 0 {
		return 0, false
	}
	return b.loadReaders[0].LoadReportInterval(), true
}

// LoadSource returns Env.Loads as given to New; nil when none was.
func (b *Balancer) LoadSource() LoadSource { return b.loads }

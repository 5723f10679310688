package strategies

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Balancer is a built strategy: a base Picker, possibly wrapped. It is safe
// for concurrent use. Its Pick returns NoHost only when a wrapper allows no
// host (every one ejected, without a panic threshold), or when no endpoint
// is both in the host set and a member (SetMembers).
//
// The Balancer counts the requests in flight per endpoint (incremented at
// Pick, decremented at the first call of done) and serialises every Picker
// call, every done and every use of Env.Rand under one mutex. It gives the
// outermost Picker the current hosts and, through a hostFeed, tells it of
// each change of them (see HostsUpdater).
type Balancer struct {
	// Immutable after New.
	spec     string
	picker   Picker    // outermost Picker
	sweepers []Sweeper // the Pickers with time-based state
	ejectors []ejecting
	probers  []Prober
	pinners  []connPinner // the Pickers that pin connections
	// loadReaders are the Pickers that read Env.Loads.
	loadReaders []LoadReader
	loads       LoadSource // Env.Loads
	clock       Clock
	events      func(Event)
	policy      *Policy // nil: one attempt per request

	mu sync.Mutex
	// serial: the owner uses the Balancer from one goroutine only, so
	// pick and end skip mu (SetSerial).
	serial   bool
	inflight []int64 // guarded by mu; read by Pickers with mu held
	// listed: whether each endpoint is in the host set (SetHosts);
	// members: whether each is a member (SetMembers), nil when every
	// endpoint is; present: whether each is in hosts, both at once.
	listed  []bool   // guarded by mu
	members []bool   // guarded by mu
	present []bool   // guarded by mu
	hosts   []int    // guarded by mu; the endpoints that may be picked, ascending; may be empty
	feed    hostFeed // guarded by mu; gives hosts to picker
}

// ejecting is implemented by Pickers that eject endpoints.
type ejecting interface {
	Ejections() int
	Ejected(dst []int) []int
}

// New parses spec (see Parse) and builds it for env.
func New(spec string, env Env) (*Balancer, error) {
	if env.N < 1 {
		return nil, fmt.Errorf("strategies: Env.N must be at least 1, got %d", env.N)
	}
	if env.Rand == nil {
		return nil, errors.New("strategies: Env.Rand is nil; a seeded *rand.Rand is required so that runs are repeatable")
	}
	weights := make([]float64, env.N)
	for i := range weights {
		weights[i] = 1
	}
	if env.Weights != nil {
		if len(env.Weights) != env.N {
			return nil, fmt.Errorf("strategies: Env.Weights has %d weights for %d endpoints", len(env.Weights), env.N)
		}
		for i, w := range env.Weights {
			if !(w > 0) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("strategies: weight of endpoint %d must be a finite number > 0, got %v", i, w)
			}
		}
		copy(weights, env.Weights)
	}
	zones, err := newZoneMap(env)
	if err != nil {
		return nil, err
	}
	c, err := compile(spec)
	if err != nil {
		return nil, err
	}
	be := &buildEnv{
		n:        env.N,
		clock:    env.Clock,
		rand:     env.Rand,
		events:   env.Events,
		weights:  weights,
		inflight: make([]int64, env.N),
		conns:    env.Connections,
		loads:    env.Loads,
		zones:    zones,
	}
	if err := checkNeeds(c.spec, be); err != nil {
		return nil, err
	}
	if be.conns <= 0 {
		be.conns = DefaultConnections
	}
	if be.clock == nil {
		be.clock = SystemClock{}
	}
	if be.events == nil {
		be.events = func(Event) {}
	}
	b := &Balancer{
		spec:     spec,
		hosts:    make([]int, env.N),
		inflight: be.inflight,
		listed:   make([]bool, env.N),
		present:  make([]bool, env.N),
		clock:    be.clock,
		events:   be.events,
		loads:    env.Loads,
	}
	for i := range b.hosts {
		b.hosts[i] = i
		b.listed[i] = true
		b.present[i] = true
	}
	layers := []Picker{c.base(be)}
	if c.spec.hasPolicy() {
		// Retries and hedges avoid hosts; what the wrappers allow is
		// narrowed right around the base strategy (excluder).
		layers[0] = newExcluder(layers[0])
	}
	for _, wrap := range c.wrappers {
		be.inside = layers
		layers = append(layers, wrap(layers[len(layers)-1], be))
	}
	be.inside = nil
	b.picker = layers[len(layers)-1]
	b.feed = newHostFeed(b.picker)
	for _, p := range layers {
		if s, ok := p.(Sweeper); ok {
			b.sweepers = append(b.sweepers, s)
		}
		if e, ok := p.(ejecting); ok {
			b.ejectors = append(b.ejectors, e)
		}
		if pr, ok := p.(Prober); ok {
			b.probers = append(b.probers, pr)
		}
		if rl, ok := p.(*retryLayer); ok {
			b.ensurePolicy().retry = rl
		}
		if hl, ok := p.(*hedgeLayer); ok {
			b.ensurePolicy().hedge = hl
		}
		if cp, ok := p.(connPinner); ok {
			b.pinners = append(b.pinners, cp)
		}
		if lr, ok := p.(LoadReader); ok {
			if env.Loads == nil {
				return nil, fmt.Errorf("%s: report_interval needs a shared load source (Env.Loads) that whoever runs the strategy refreshes; none was given", c.spec.Base)
			}
			b.loadReaders = append(b.loadReaders, lr)
		}
	}
	return b, nil
}

// ensurePolicy returns the Balancer's Policy, making it at the first call.
func (b *Balancer) ensurePolicy() *Policy {
	if b.policy == nil {
		b.policy = &Policy{b: b}
	}
	return b.policy
}

// SetHosts replaces the host set, the endpoints that may be picked, as a
// service discovery update does: ids in 0..N-1, at least one, without
// duplicates, in any order. Only the members among them are picked (see
// SetMembers). Endpoints that enter or leave the hosts picked from are
// reported as EventJoin and EventLeave events. Requests in flight to an
// endpoint that left still end normally through their done.
func (b *Balancer) SetHosts(ids []int) error {
	if len(ids) == 0 {
		return errors.New("strategies: SetHosts needs at least one endpoint")
	}
	present := make([]bool, len(b.present))
	for _, id := range ids {
		if id < 0 || id >= len(present) {
			return fmt.Errorf("strategies: SetHosts: endpoint %d is out of range 0..%d", id, len(present)-1)
		}
		if present[id] {
			return fmt.Errorf("strategies: SetHosts: endpoint %d given twice", id)
		}
		present[id] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listed = present
	b.narrow()
	return nil
}

// Hosts returns the endpoints that may currently be picked, ascending:
// the members of the host set; empty when there are none.
func (b *Balancer) Hosts() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.hosts)
}

// Probes returns how the Balancer wants its endpoints probed, and false
// when no wrapper checks them actively. Whoever runs the Balancer then sends
// those probes and reports each with ReportProbe.
func (b *Balancer) Probes() (ProbeConfig, bool) {
	if len(b.probers) == 0 {
		return ProbeConfig{}, false
	}
	return b.probers[0].ProbeConfig(), true
}

// ReportProbe records the result of one active probe of endpoint.
func (b *Balancer) ReportProbe(endpoint int, healthy bool) {
	if endpoint < 0 || endpoint >= len(b.inflight) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for _, p := range b.probers {
		p.ProbeResult(endpoint, healthy, now)
	}
}

// Pick chooses an endpoint for req. The caller must call done once the
// request has ended (response body read or closed, or the request failed);
// only the first call counts, later calls are no-ops. On NoHost the caller
// fails the request without sending it, and calls done too.
func (b *Balancer) Pick(req Request) (endpoint int, done func(Outcome)) {
	ep, _, done := b.PickConn(req)
	return ep, done
}

// PickConn is Pick that also says which of the strategy's pinned
// connections the request goes on (see the pinned wrapper); conn.Slot is
// -1 when the strategy pins none, or the pick is NoHost.
func (b *Balancer) PickConn(req Request) (endpoint int, conn Conn, done func(Outcome)) {
	ep, conn, inner := b.pick(req)
	p := &pending{b: b, endpoint: ep, done: inner}
	return ep, conn, p.finish
}

// PickOnce is PickConn for a caller that reports every request's outcome
// exactly once, to End with the done returned here (the engine's
// transport): it allocates no wrapper to make a second report harmless.
func (b *Balancer) PickOnce(req Request) (endpoint int, conn Conn, done func(Outcome)) {
	return b.pick(req)
}

// End reports the outcome of a request PickOnce picked endpoint for; done
// is what PickOnce returned. Call it exactly once per pick, NoHost too.
func (b *Balancer) End(endpoint int, done func(Outcome), o Outcome) { b.end(endpoint, done, o) }

// pick is PickConn without the done wrapper: the endpoint (counted in
// flight unless NoHost), the connection and the Picker's own done.
func (b *Balancer) pick(req Request) (endpoint int, conn Conn, inner func(Outcome)) {
	if !b.serial {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if len(b.hosts) == 0 { // no member in the host set (SetMembers)
		return NoHost, Conn{Slot: -1}, noDone
	}
	b.feed.sync(b.hosts)
	ep, inner := b.picker.Pick(req, b.hosts)
	conn = Conn{Slot: -1}
	if len(b.pinners) > 0 {
		if c, ok := b.pinners[0].takeConn(); ok && ep != NoHost {
			conn = c
		}
	}
	if ep != NoHost {
		b.inflight[ep]++
	}
	return ep, conn, inner
}

// pending is one picked request whose done has not run yet; fired makes its
// done idempotent, as httplb's whenDone does with a compare-and-swap.
type pending struct {
	b        *Balancer
	endpoint int
	done     func(Outcome)
	fired    atomic.Bool
}

func (p *pending) finish(o Outcome) {
	if !p.fired.CompareAndSwap(false, true) {
		return
	}
	p.b.end(p.endpoint, p.done, o)
}

// end ends a request picked for endpoint whose Picker's done is inner.
func (b *Balancer) end(endpoint int, inner func(Outcome), o Outcome) {
	if !b.serial {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if endpoint != NoHost {
		b.inflight[endpoint]--
	}
	inner(o)
}

// Spec returns the spec as given to New.
func (b *Balancer) Spec() string { return b.spec }

// Ejections returns how many times any endpoint has been ejected; 0 without
// an ejection wrapper.
func (b *Balancer) Ejections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, e := range b.ejectors {
		n += e.Ejections()
	}
	return n
}

// Ejected returns the ids of the endpoints currently ejected, ascending and
// without duplicates; nil when none. An endpoint whose ejection time is up
// stays listed until the next Pick or Sweep re-admits it.
func (b *Balancer) Ejected() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []int
	for _, e := range b.ejectors {
		ids = e.Ejected(ids)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// InFlight returns, per endpoint, the requests picked whose done has not run.
func (b *Balancer) InFlight() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.inflight...)
}

// Sweep applies the time-based changes due at or before now, such as
// re-admitting ejected endpoints, which Pick otherwise does lazily with the
// Env clock.
func (b *Balancer) Sweep(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.sweepers {
		s.Sweep(now)
	}
}

// hostFeed tells a Picker of changes of its hosts as the HostsUpdater
// contract says: the Balancer holds one for its outermost Picker, every
// wrapper one for its inner Picker, and nothing else calls UpdateHosts.
// Whoever gives the hosts calls changed whenever the hosts of its next pick
// may differ from those of its previous pick (its own host set changed, an
// endpoint was ejected or re-admitted, a host was dropped for a pick), and
// sync right before every pick; sync then compares the hosts with those of
// the previous pick, so the Picker hears of a change once, at the first pick
// that sees it, and never of a change undone before the next pick. Between
// calls of changed, and for a Picker that is no HostsUpdater, a pick costs
// one test.
type hostFeed struct {
	to    HostsUpdater // the Picker fed; nil when it is no HostsUpdater
	last  []int        // a copy of the hosts of the latest UpdateHosts
	fed   bool         // UpdateHosts has been called
	dirty bool         // the hosts may differ from last
}

// newHostFeed returns the feed of p, which must not change afterwards.
func newHostFeed(p Picker) hostFeed {
	u, _ := p.(HostsUpdater)
	return hostFeed{to: u, dirty: true}
}

// changed notes that the hosts of the next pick may differ from those of the
// previous one.
func (f *hostFeed) changed() { f.dirty = true }

// sync readies the Picker for a pick from hosts: it calls its
// UpdateHosts(hosts) when hosts differ from those of the latest call. It is
// inlined.
func (f *hostFeed) sync(hosts []int) {
	if f.dirty && f.to != nil {
		f.update(hosts)
	}
}

func (f *hostFeed) update(hosts []int) {
	f.dirty = false
	if f.fed && slices.Equal(f.last, hosts) {
		return
	}
	f.last = append(f.last[:0], hosts...)
	f.fed = true
	f.to.UpdateHosts(hosts)
}

// siftDown restores the order of the binary heap h (first = earliest by
// first) below position i.
func siftDown(h []int, i int, first func(a, b int) bool) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && first(h[r], h[c]) {
			c = r
		}
		if !first(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

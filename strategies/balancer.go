package strategies

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Balancer is a built strategy: a base Picker, possibly wrapped. It is safe
// for concurrent use and its Pick never fails: wrappers never hide every
// endpoint.
//
// The Balancer counts the requests in flight per endpoint (incremented at
// Pick, decremented at the first call of done) and serialises every Picker
// call, every done and every use of Env.Rand under one mutex.
type Balancer struct {
	// Immutable after New.
	spec     string
	hosts    []int     // 0..N-1, passed to the Picker on every Pick
	picker   Picker    // outermost Picker
	sweepers []Sweeper // the Pickers with time-based state
	ejectors []ejecting

	mu       sync.Mutex
	inflight []int64 // guarded by mu; read by Pickers with mu held
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
	c, err := compile(spec)
	if err != nil {
		return nil, err
	}
	be := &buildEnv{
		n:        env.N,
		clock:    env.Clock,
		rand:     env.Rand,
		events:   env.Events,
		inflight: make([]int64, env.N),
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
	}
	for i := range b.hosts {
		b.hosts[i] = i
	}
	layers := []Picker{c.base(be)}
	for _, wrap := range c.wrappers {
		layers = append(layers, wrap(layers[len(layers)-1], be))
	}
	b.picker = layers[len(layers)-1]
	for _, p := range layers {
		if s, ok := p.(Sweeper); ok {
			b.sweepers = append(b.sweepers, s)
		}
		if e, ok := p.(ejecting); ok {
			b.ejectors = append(b.ejectors, e)
		}
	}
	return b, nil
}

// Pick chooses an endpoint for req. The caller must call done once the
// request has ended (response body read or closed, or the request failed);
// only the first call counts, later calls are no-ops.
func (b *Balancer) Pick(req Request) (endpoint int, done func(Outcome)) {
	b.mu.Lock()
	ep, inner := b.picker.Pick(req, b.hosts)
	b.inflight[ep]++
	b.mu.Unlock()
	p := &pending{b: b, endpoint: ep, done: inner}
	return ep, p.finish
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
	b := p.b
	b.mu.Lock()
	b.inflight[p.endpoint]--
	p.done(o)
	b.mu.Unlock()
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

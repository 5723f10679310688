package faultyserver

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

var (
	errQueueFull = errors.New("queue full")
	errClosed    = errors.New("server closed")
)

// pool is a set of workers with an explicit first-come first-served queue.
// A request holds a worker from a successful acquire until its release.
type pool struct {
	workers int // immutable; 0 = unlimited
	limit   int // immutable; max queued, 0 = unbounded

	mu     sync.Mutex
	busy   int           // workers held
	queue  list.List     // of *waiter, oldest first
	closed bool          // set once by close
	done   chan struct{} // closed by close
}

// waiter is one queued request. ready is closed when a worker is handed to
// it; granted and elem are guarded by pool.mu.
type waiter struct {
	ready   chan struct{}
	granted bool
	elem    *list.Element // nil once out of the queue
}

func newPool(workers, limit int) *pool {
	return &pool{workers: workers, limit: limit, done: make(chan struct{})}
}

// acquire takes a worker, queueing behind earlier requests if none is free.
// It returns errQueueFull when the queue is at its limit and errClosed when
// the pool closes first. While queued it gives up with ctx.Err() when ctx is
// done (a request kept after its client left is served under a context
// only a Reset cancels: abandon.go). A nil
// error means the caller holds a worker and must release it.
//
// With errQueueFull, load is the pool's load (see release) at the instant
// of the refusal, read under the same lock as the decision: the workers
// held plus the requests queued, the refused request not among them. It is
// 0 with any other error.
func (p *pool) acquire(ctx context.Context) (load int, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, errClosed
	}
	if p.workers == 0 || (p.busy < p.workers && p.queue.Len() == 0) {
		p.busy++
		p.mu.Unlock()
		return 0, nil
	}
	if p.limit > 0 && p.queue.Len() >= p.limit {
		load = p.busy + p.queue.Len()
		p.mu.Unlock()
		return load, errQueueFull
	}
	w := &waiter{ready: make(chan struct{})}
	w.elem = p.queue.PushBack(w)
	p.mu.Unlock()

	select {
	case <-w.ready:
		return 0, nil
	case <-p.done:
		err = errClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted {
		// Handed a worker while giving up: keep it; the caller sees the
		// cancellation or closure next and releases it at once.
		return 0, nil
	}
	if w.elem != nil {
		p.queue.Remove(w.elem)
		w.elem = nil
	}
	return 0, err
}

// release returns a worker, handing it straight to the oldest waiter if any,
// and returns the pool's load just after: the workers still held plus the
// requests still queued, read under the same lock. The releasing request is
// not counted; a waiter handed the worker counts once, as holding it.
func (p *pool) release() (load int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if front := p.queue.Front(); front != nil && !p.closed {
		w := p.queue.Remove(front).(*waiter)
		w.elem = nil
		w.granted = true
		close(w.ready)
	} else {
		p.busy--
	}
	return p.busy + p.queue.Len()
}

// counts returns the workers held and the requests queued.
func (p *pool) counts() (busy, queued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy, p.queue.Len()
}

// load returns the workers held plus the requests queued.
func (p *pool) load() int {
	busy, queued := p.counts()
	return busy + queued
}

// close makes every current and future wait end with errClosed. It is
// idempotent.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for e := p.queue.Front(); e != nil; e = e.Next() {
		e.Value.(*waiter).elem = nil
	}
	p.queue.Init()
	close(p.done)
}

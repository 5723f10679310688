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
// done, unless keep is set, in which case only close ends the wait. A nil
// error means the caller holds a worker and must release it.
func (p *pool) acquire(ctx context.Context, keep bool) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errClosed
	}
	if p.workers == 0 || (p.busy < p.workers && p.queue.Len() == 0) {
		p.busy++
		p.mu.Unlock()
		return nil
	}
	if p.limit > 0 && p.queue.Len() >= p.limit {
		p.mu.Unlock()
		return errQueueFull
	}
	w := &waiter{ready: make(chan struct{})}
	w.elem = p.queue.PushBack(w)
	p.mu.Unlock()

	var gone <-chan struct{}
	if !keep {
		gone = ctx.Done()
	}
	var err error
	select {
	case <-w.ready:
		return nil
	case <-p.done:
		err = errClosed
	case <-gone:
		err = ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted {
		// Handed a worker while giving up: keep it; the caller sees the
		// cancellation or closure next and releases it at once.
		return nil
	}
	if w.elem != nil {
		p.queue.Remove(w.elem)
		w.elem = nil
	}
	return err
}

// release returns a worker, handing it straight to the oldest waiter if any.
func (p *pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if front := p.queue.Front(); front != nil && !p.closed {
		w := p.queue.Remove(front).(*waiter)
		w.elem = nil
		w.granted = true
		close(w.ready)
		return
	}
	p.busy--
}

// counts returns the workers held and the requests queued.
func (p *pool) counts() (busy, queued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy, p.queue.Len()
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

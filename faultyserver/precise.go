package faultyserver

import (
	"container/heap"
	"runtime"
	"sync"
	"time"
)

// Service times must be accurate to well under a millisecond: the harness
// reports its overhead as measured latency minus the service time. Go's
// runtime timers are not: an idle scheduler waits in the network poller in
// whole milliseconds (runtime/netpoll_epoll.go rounds the wait down, then
// waits at least 1 ms for a sub-millisecond remainder), so a 10 ms timer
// fires up to 1 ms late, 0.5 ms on average.
//
// precise therefore finishes the last preciseSpan of every sleep on one
// goroutine per process, which waits for the earliest deadline with a
// nanosecond timeout (ppoll(2) on Linux) and is woken early through an
// eventfd when a nearer deadline arrives. It wakes once per deadline, not on
// a polling tick, so its cost follows the request rate. The coarse part of
// a sleep stays on ordinary timers, so the goroutine only runs while some
// deadline is near.
const preciseSpan = 2 * time.Millisecond

// sleeper is shared by every server of the process. Its goroutine runs only
// while some deadline is pending, so an idle process holds none.
var sleeper precise

type precise struct {
	mu      sync.Mutex
	h       deadlineHeap
	running bool      // a loop goroutine is serving h
	until   time.Time // the deadline the loop is waiting for; zero when not waiting
}

type deadlineEntry struct {
	at time.Time
	ch chan struct{}
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// at returns a channel closed at t, never before.
func (p *precise) at(t time.Time) <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	heap.Push(&p.h, deadlineEntry{at: t, ch: ch})
	start := !p.running
	p.running = true
	nearer := !p.until.IsZero() && t.Before(p.until)
	p.mu.Unlock()
	if start {
		go p.loop()
	}
	if nearer {
		wake()
	}
	return ch
}

func (p *precise) loop() {
	for {
		p.mu.Lock()
		p.until = time.Time{}
		now := time.Now()
		fired := false
		for len(p.h) > 0 && !p.h[0].at.After(now) {
			close(heap.Pop(&p.h).(deadlineEntry).ch)
			fired = true
		}
		if len(p.h) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		if fired {
			// Let the woken handlers run on this P now: while waiting in a
			// system call the loop holds its P until the runtime retakes it.
			p.mu.Unlock()
			runtime.Gosched()
			continue
		}
		p.until = p.h[0].at
		wait := p.until.Sub(now)
		p.mu.Unlock()
		// The default timer slack of 50 µs would be added to every wake-up.
		// The goroutine may have moved threads, so set it each time.
		tightenTimerSlack()
		waitFor(wait)
	}
}

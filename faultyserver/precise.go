package faultyserver

import (
	"container/heap"
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
// goroutine per process, which waits for the earliest deadline on an alarm
// (a timerfd on Linux) that the runtime's poller watches like a socket: the
// kernel's high-resolution timer wakes the poller, so the wake-up is as
// accurate as the kernel's, and while it waits the goroutine holds neither
// a thread nor a processor. (An earlier version waited in ppoll(2) on its
// own thread; that held one of the process's processors in a system call
// for most of every busy second, and on two cores every other goroutine of
// the process waited for the one left.) A nearer deadline re-arms the
// alarm. The goroutine wakes once per deadline, not on a polling tick, so
// its cost follows the request rate, and the coarse part of a sleep stays
// on ordinary timers, so it only runs while some deadline is near.
const preciseSpan = 2 * time.Millisecond

// sleeper is shared by every server of the process. Its goroutine runs only
// while some deadline is pending, so an idle process holds none.
var sleeper precise

type precise struct {
	mu      sync.Mutex
	h       deadlineHeap
	running bool      // a loop goroutine is serving h
	until   time.Time // the deadline the alarm is set for; zero when not waiting
	alarm   alarm     // set and waited on under the rules of alarm (mu serializes set)
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
	if !p.until.IsZero() && t.Before(p.until) {
		p.until = t
		p.alarm.set(time.Until(t))
	}
	p.mu.Unlock()
	if start {
		go p.loop()
	}
	return ch
}

func (p *precise) loop() {
	for {
		p.mu.Lock()
		now := time.Now()
		for len(p.h) > 0 && !p.h[0].at.After(now) {
			close(heap.Pop(&p.h).(deadlineEntry).ch)
		}
		if len(p.h) == 0 {
			p.running = false
			p.until = time.Time{}
			p.mu.Unlock()
			return
		}
		p.until = p.h[0].at
		wait := p.until.Sub(now)
		p.alarm.set(wait)
		p.mu.Unlock()
		p.alarm.wait(wait)
	}
}

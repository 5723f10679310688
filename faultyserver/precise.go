package faultyserver

import (
	"context"
	"runtime/debug"
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
	// broken is set when the loop panicked: from then on every deadline
	// is a runtime timer (see fail).
	broken bool
}

// sleeperHook, set only by tests before the loop runs, is called by the
// loop under mu each time it wakes.
var sleeperHook func()

type deadlineEntry struct {
	at time.Time
	ch chan struct{}
}

// deadlineHeap is a binary min-heap of deadlines, typed rather than
// container/heap's, whose Push and Pop box every entry: two allocations
// per service request.
type deadlineHeap []deadlineEntry

// push adds e.
func (h *deadlineHeap) push(e deadlineEntry) {
	s := append(*h, e)
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].at.Before(s[parent].at) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
	*h = s
}

// pop removes and returns the earliest deadline; h must not be empty.
func (h *deadlineHeap) pop() deadlineEntry {
	s := *h
	top, n := s[0], len(s)-1
	s[0] = s[n]
	s[n] = deadlineEntry{} // no reference to a channel left behind
	s = s[:n]
	for i := 0; ; {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && s[r].at.Before(s[m].at) {
			m = r
		}
		if !s[m].at.Before(s[i].at) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// at returns a channel closed at t, never before.
func (p *precise) at(t time.Time) <-chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	if p.broken {
		p.mu.Unlock()
		time.AfterFunc(time.Until(t), func() { close(ch) })
		return ch
	}
	p.h.push(deadlineEntry{at: t, ch: ch})
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

// loop wakes the sleepers whose deadline has passed, until none is left.
// A panic in it is recovered (see fail): it would otherwise end the
// process, every server in it.
func (p *precise) loop() {
	defer func() {
		if v := recover(); v != nil {
			p.fail(Panic{Where: "the precise sleeper every server of the process shares", Value: v, Stack: debug.Stack(),
				Effect: "service times are kept by the runtime's timers from now on, up to 1 ms late"})
		}
	}()
	for {
		wait, more := p.wake()
		if !more {
			return
		}
		p.alarm.wait(wait)
	}
}

// wake closes the channels of the deadlines that have passed and sets the
// alarm for the next; more is false when none is left, and the loop ends.
func (p *precise) wake() (wait time.Duration, more bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sleeperHook != nil {
		sleeperHook()
	}
	now := time.Now()
	for len(p.h) > 0 && !p.h[0].at.After(now) {
		close(p.h.pop().ch)
	}
	if len(p.h) == 0 {
		p.running = false
		p.until = time.Time{}
		return 0, false
	}
	p.until = p.h[0].at
	wait = p.until.Sub(now)
	p.alarm.set(wait)
	return wait, true
}

// fail is the end of a loop that panicked with x: every pending sleeper
// wakes now (at most preciseSpan early), later deadlines are runtime
// timers, and every server that takes reports (Config.OnPanic) is told.
func (p *precise) fail(x Panic) {
	p.mu.Lock()
	p.broken = true
	for _, e := range p.h {
		close(e.ch)
	}
	p.h, p.running, p.until = nil, false, time.Time{}
	p.mu.Unlock()
	reportShared(x)
}

// coarseFrom is the shortest sleep whose start sleepUntil leaves to a
// runtime timer: a shorter one is the precise sleeper's alone, which wakes
// the process once at its end instead of twice (the timer, then the
// sleeper's alarm). A process that serves little load, such as one
// instance in its own container, sleeps between the two, and each wake-up
// costs it a trip through the scheduler; longer sleeps, which a client may
// well abandon, stay off the sleeper's heap until their last preciseSpan.
const coarseFrom = 100 * time.Millisecond

// sleepUntil waits until deadline, accurately (see preciseSpan). It returns
// early with ctx.Err() when ctx is done and with errClosed when closed is.
func sleepUntil(ctx context.Context, deadline time.Time, closed <-chan struct{}) error {
	d := time.Until(deadline)
	if d <= 0 {
		return nil
	}
	if coarse := d - preciseSpan; d > coarseFrom {
		t := time.NewTimer(coarse)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-closed:
			t.Stop()
			return errClosed
		}
	}
	select {
	case <-sleeper.at(deadline):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errClosed
	}
}

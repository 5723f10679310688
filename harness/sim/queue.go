package sim

import "time"

// simEvent is an answer due at a virtual time: the end of a request's
// service or of its fail delay. slot and gen name the request (see sim).
type simEvent struct {
	at   time.Duration
	seq  uint64 // order of scheduling, breaks ties of at
	slot int32
	gen  uint32
}

func (e *simEvent) before(f *simEvent) bool {
	return e.at < f.at || (e.at == f.at && e.seq < f.seq)
}

// eventQueue holds the pending events, earliest (at, seq) first. An event
// no earlier than the last one appended to the lane, a FIFO ring, goes to
// the lane; any other to a heap. The lane stays sorted, since at is
// non-decreasing along it and seq increasing, so the earliest event is the
// earlier of the lane's head and the heap's top. With a fixed service time
// every service end lands in the lane at O(1); the heap takes only the
// events that overtake it. Its zero value is empty.
type eventQueue struct {
	lane ring[simEvent]
	heap eventHeap
}

func (q *eventQueue) len() int { return q.lane.len() + len(q.heap) }

func (q *eventQueue) push(e simEvent) {
	if q.lane.len() > 0 && e.before(q.lane.back()) {
		q.heap.push(e)
		return
	}
	q.lane.push(e)
}

// next returns the time of the earliest event, or never when there is none.
func (q *eventQueue) next() time.Duration {
	switch {
	case q.lane.len() == 0 && len(q.heap) == 0:
		return never
	case q.lane.len() == 0:
		return q.heap[0].at
	case len(q.heap) == 0:
		return q.lane.front().at
	}
	return min(q.heap[0].at, q.lane.front().at)
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() simEvent {
	if q.lane.len() == 0 || (len(q.heap) > 0 && q.heap[0].before(q.lane.front())) {
		return q.heap.pop()
	}
	return q.lane.pop()
}

// eventHeap is a 4-ary min-heap of events by (at, seq) over a plain slice:
// shallower than a binary heap, and without container/heap's interface
// calls and boxing. Its zero value is empty.
type eventHeap []simEvent

func (h *eventHeap) push(e simEvent) {
	s := append(*h, e)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = e
	*h = s
}

// pop removes and returns the earliest event; the heap must not be empty.
func (h *eventHeap) pop() simEvent {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s = s[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			for j := c + 1; j < min(c+4, n); j++ {
				if s[j].before(&s[m]) {
					m = j
				}
			}
			if !s[m].before(&last) {
				break
			}
			s[i] = s[m]
			i = m
		}
		s[i] = last
	}
	*h = s
	return top
}

// ring is a FIFO queue in a circular buffer whose length is a power of
// two; it grows by doubling and never shrinks. Its zero value is empty.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (q *ring[T]) len() int { return q.n }

func (q *ring[T]) push(v T) {
	if q.n == len(q.buf) {
		buf := make([]T, max(16, 2*len(q.buf)))
		for i := range q.n {
			buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// front returns the oldest entry; the queue must not be empty.
func (q *ring[T]) front() *T { return &q.buf[q.head] }

// back returns the newest entry; the queue must not be empty.
func (q *ring[T]) back() *T { return &q.buf[(q.head+q.n-1)&(len(q.buf)-1)] }

// pop removes and returns the oldest entry; the queue must not be empty.
func (q *ring[T]) pop() T {
	v := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v
}

package harness

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
	lane     []simEvent // ring; length a power of two or 0
	laneHead int
	laneLen  int
	heap     eventHeap
}

func (q *eventQueue) len() int { return q.laneLen + len(q.heap) }

func (q *eventQueue) push(e simEvent) {
	if q.laneLen > 0 && e.before(&q.lane[(q.laneHead+q.laneLen-1)&(len(q.lane)-1)]) {
		q.heap.push(e)
		return
	}
	if q.laneLen == len(q.lane) {
		lane := make([]simEvent, max(16, 2*len(q.lane)))
		for i := range q.laneLen {
			lane[i] = q.lane[(q.laneHead+i)&(len(q.lane)-1)]
		}
		q.lane, q.laneHead = lane, 0
	}
	q.lane[(q.laneHead+q.laneLen)&(len(q.lane)-1)] = e
	q.laneLen++
}

// next returns the time of the earliest event, or never when there is none.
func (q *eventQueue) next() time.Duration {
	switch {
	case q.laneLen == 0 && len(q.heap) == 0:
		return never
	case q.laneLen == 0:
		return q.heap[0].at
	case len(q.heap) == 0:
		return q.lane[q.laneHead].at
	}
	return min(q.heap[0].at, q.lane[q.laneHead].at)
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() simEvent {
	if q.laneLen == 0 || (len(q.heap) > 0 && q.heap[0].before(&q.lane[q.laneHead])) {
		return q.heap.pop()
	}
	e := q.lane[q.laneHead]
	q.laneHead = (q.laneHead + 1) & (len(q.lane) - 1)
	q.laneLen--
	return e
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

// ring is a FIFO queue of request slots in a circular buffer whose length
// is a power of two; it grows by doubling and never shrinks. Its zero value
// is empty.
type ring struct {
	buf  []int32
	head int
	n    int
}

func (q *ring) len() int { return q.n }

func (q *ring) push(v int32) {
	if q.n == len(q.buf) {
		buf := make([]int32, max(16, 2*len(q.buf)))
		for i := range q.n {
			buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// front returns the oldest entry; the queue must not be empty.
func (q *ring) front() int32 { return q.buf[q.head] }

// pop removes and returns the oldest entry; the queue must not be empty.
func (q *ring) pop() int32 {
	v := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v
}

package sim

import (
	"math"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// Request kinds, after the instance's plan.
const (
	kindServe uint8 = iota
	kindFail
	kindHang
)

// Request states, a bit set (more in calibrate.go and attempts.go).
const (
	stWaiting uint16 = 1 << iota // the client waits for an answer
	stQueued                     // in its instance's queue
	stWorking                    // holds a worker
	stKeyed                      // carries a key
)

// stIncoming is the state of a request on its way in to its instance,
// whose plan is carried out when its Latency has passed (admit.go).
const stIncoming uint16 = 1 << 8

// simReq is one request in flight, client or server side.
type simReq struct {
	at      time.Duration     // arrival
	service time.Duration     // kindServe: time on a worker
	ticket  strategies.Ticket // its pick, ended through its balancer
	key     uint64            // with stKeyed
	began   time.Duration     // stWorking: when it took its worker
	prev    int32             // in the waiting list; next also links the free list
	next    int32
	inst    int32
	src     int32 // the generator that sent it
	lb      int32 // the balancer (replica) that picked it
	gen     uint32
	status  int32 // kindFail: the status answered
	kind    uint8
	state   uint16
	post    uint32 // calibrated: the overhead after the answer, in ns
}

// alloc takes a slot for a request arriving at t and appends it to the
// waiting list.
func (s *sim) alloc(inst int, t time.Duration, req strategies.Request, lb int32, tk strategies.Ticket, kind uint8, state uint16, src int32) int32 {
	i := s.free
	if i >= 0 {
		s.free = s.reqs[i].next
	} else {
		if len(s.reqs) >= math.MaxInt32 {
			panic("harness: sim: too many requests in flight")
		}
		i = int32(len(s.reqs))
		s.reqs = append(s.reqs, simReq{})
	}
	r := &s.reqs[i]
	r.at, r.ticket, r.lb, r.inst, r.kind, r.state, r.src = t, tk, lb, int32(inst), kind, state, src
	r.key = req.Key
	if req.HasKey {
		r.state |= stKeyed
	}
	r.prev, r.next = s.tail, -1
	if s.tail >= 0 {
		s.reqs[s.tail].next = i
	} else {
		s.head = i
	}
	s.tail = i
	s.waiting++
	return i
}

// freeSlot returns slot i to the free list; events still naming it
// become stale.
func (s *sim) freeSlot(i int32) {
	r := &s.reqs[i]
	r.gen++
	r.state = 0
	r.ticket = strategies.Ticket{}
	r.next = s.free
	s.free = i
}

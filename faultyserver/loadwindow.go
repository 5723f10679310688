package faultyserver

import (
	"sync"
	"time"
)

// The load an instance reports with every answer, computed once and encoded
// twice: HTTP carries Load in LoadHeader; gRPC carries Load under
// GRPCLoadKey and the whole report as a per-call ORCA load report.

// LoadWindow is the span over which an instance's rates and utilization
// are measured for its ORCA load reports: about the last second (between
// LoadWindow-loadSlot and LoadWindow, as the window moves in slots).
const LoadWindow = time.Second

// Slots of the load window.
const (
	loadSlots = 10
	loadSlot  = LoadWindow / loadSlots
)

// loadReport is what an instance reports of its load with one answer.
type loadReport struct {
	// Load is LoadHeader's number: the other requests in the instance.
	Load int
	// Utilization is the mean number of requests holding a worker over
	// the window, divided by the workers (1 when unlimited or a sidecar):
	// the share of worker time spent serving. It counts what Stats.BusyS
	// counts, so a failing or hanging request adds nothing to it.
	Utilization float64
	// RPS and EPS are the answers, and the error answers among them, per
	// second over the window, the reporting answer included.
	RPS, EPS float64
}

// loadWindow measures an instance's recent answer rate, error rate and
// worker utilization over about LoadWindow. Safe for concurrent use.
type loadWindow struct {
	// Immutable.
	now  func() time.Time // the clock; time.Now outside tests
	cap  float64          // divides the busy count for Utilization; >= 1
	mu   sync.Mutex       // guards the rest
	orig time.Time        // slot k spans [orig+k*loadSlot, orig+(k+1)*loadSlot)
	cur  int64            // the newest slot's k
	slot [loadSlots]loadSlotCounts
	busy int           // requests holding a worker now
	area time.Duration // ∫ busy dt from orig to last
	last time.Time     // when area was last brought up to date
}

// loadSlotCounts are one slot's answers and the busy area at its start.
type loadSlotCounts struct {
	answers, errors int64
	areaAtStart     time.Duration
}

// newLoadWindow returns a window on clock now (time.Now when nil) whose
// utilization divides the busy count by workers (1 when workers <= 0).
func newLoadWindow(now func() time.Time, workers int) *loadWindow {
	if now == nil {
		now = time.Now
	}
	w := &loadWindow{now: now, cap: 1}
	if workers > 0 {
		w.cap = float64(workers)
	}
	w.reset()
	return w
}

// reset starts the window afresh from now; requests holding a worker stay
// counted as busy.
func (w *loadWindow) reset() {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.orig, w.cur, w.last, w.area = now, 0, now, 0
	w.slot = [loadSlots]loadSlotCounts{}
}

// advance brings the slots and the busy area up to now. w.mu is held.
func (w *loadWindow) advance(now time.Time) {
	if now.Before(w.last) {
		now = w.last
	}
	k := int64(now.Sub(w.orig) / loadSlot)
	if k > w.cur {
		first := w.cur + 1
		if k-first >= loadSlots {
			first = k - loadSlots + 1 // older slots would be overwritten anyway
		}
		for j := first; j <= k; j++ {
			start := w.orig.Add(time.Duration(j) * loadSlot)
			w.slot[j%loadSlots] = loadSlotCounts{areaAtStart: w.area + time.Duration(w.busy)*start.Sub(w.last)}
		}
		w.cur = k
	}
	w.area += time.Duration(w.busy) * now.Sub(w.last)
	w.last = now
}

// begin counts a request taking a worker at t.
func (w *loadWindow) begin(t time.Time) {
	w.mu.Lock()
	w.advance(t)
	w.busy++
	w.mu.Unlock()
}

// end counts a request releasing its worker at t.
func (w *loadWindow) end(t time.Time) {
	w.mu.Lock()
	w.advance(t)
	w.busy--
	w.mu.Unlock()
}

// answer counts an answer given now, an error answer when failed.
func (w *loadWindow) answer(failed bool) {
	now := w.now()
	w.mu.Lock()
	w.advance(now)
	s := &w.slot[w.cur%loadSlots]
	s.answers++
	if failed {
		s.errors++
	}
	w.mu.Unlock()
}

// report returns the window's rates and utilization now, with load as
// the report's Load.
func (w *loadWindow) report(load int) loadReport {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now)
	oldest := max(w.cur-loadSlots+1, 0)
	span := now.Sub(w.orig.Add(time.Duration(oldest) * loadSlot))
	// Early in a slot-sized window the span is short and a single answer
	// would make a huge rate: count at least one slot.
	span = max(span, loadSlot)
	var answers, errors int64
	for k := oldest; k <= w.cur; k++ {
		s := &w.slot[k%loadSlots]
		answers += s.answers
		errors += s.errors
	}
	area := w.area - w.slot[oldest%loadSlots].areaAtStart
	sec := span.Seconds()
	return loadReport{
		Load:        load,
		Utilization: area.Seconds() / sec / w.cap,
		RPS:         float64(answers) / sec,
		EPS:         float64(errors) / sec,
	}
}

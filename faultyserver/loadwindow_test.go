package faultyserver

import (
	"cmp"
	"math"
	"slices"
	"testing"
	"time"
)

// fakeClock is a settable clock for a loadWindow.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time               { return c.t }
func (c *fakeClock) set(d time.Duration)          { c.t = time.Unix(1000, 0).Add(d) }
func (c *fakeClock) at(d time.Duration) time.Time { return time.Unix(1000, 0).Add(d) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLoadWindow(t *testing.T) {
	c := &fakeClock{}
	c.set(0)
	w := newLoadWindow(c.now, 2)

	// One worker busy from 50ms to 550ms, another from 300ms to 400ms;
	// answers at 100ms steps, every third an error; in time order, as the
	// window sees them.
	type event struct {
		at time.Duration
		do func(time.Time)
	}
	events := []event{
		{ms(50), w.begin}, {ms(300), w.begin}, {ms(400), w.end}, {ms(550), w.end},
	}
	for i := 1; i <= 9; i++ {
		failed := i%3 == 0
		events = append(events, event{time.Duration(i) * ms(100), func(time.Time) { w.answer(failed) }})
	}
	slices.SortStableFunc(events, func(a, b event) int {
		return cmp.Compare(a.at, b.at)
	})
	for _, e := range events {
		c.set(e.at)
		e.do(c.now())
	}

	tests := []struct {
		name      string
		at        time.Duration
		rps, eps  float64
		util      float64
		slotsFrom time.Duration // the window's start
	}{
		// At 950ms the window began at 0: 9 answers, 3 errors, 600ms of
		// worker time over 2 workers.
		{"first second", ms(950), 9 / 0.95, 3 / 0.95, 0.6 / 0.95 / 2, 0},
		// At 1250ms it begins at 300ms (slots 3..12): answers at 300..900
		// (7, errors at 300, 600, 900), busy 300..550 and 300..400.
		{"sliding", ms(1250), 7 / 0.95, 3 / 0.95, 0.35 / 0.95 / 2, ms(300)},
		// Long after, nothing is left.
		{"idle", ms(5000), 0, 0, 0, ms(4100)},
	}
	for _, tc := range tests {
		c.set(tc.at)
		got := w.report(3)
		if got.Load != 3 || !near(got.RPS, tc.rps) || !near(got.EPS, tc.eps) || !near(got.Utilization, tc.util) {
			t.Errorf("%s: report %+v, want rps %v eps %v utilization %v", tc.name, got, tc.rps, tc.eps, tc.util)
		}
	}

	// A request still holding a worker counts up to now.
	w.begin(c.at(ms(5000)))
	c.set(ms(5500))
	// The window begins at 4600ms.
	if got := w.report(0); !near(got.Utilization, 0.5/0.9/2) {
		t.Errorf("in service: utilization %v, want %v", got.Utilization, 0.5/0.9/2)
	}
	// reset forgets the past but not the request in service.
	w.reset()
	c.set(ms(5700))
	if got := w.report(0); got.RPS != 0 || !near(got.Utilization, 1.0/2) {
		t.Errorf("after reset: %+v, want no answers and one of 2 workers busy", got)
	}
}

// TestLoadWindowShortSpan: a first answer just after the start counts
// over a whole slot, not over the microseconds since.
func TestLoadWindowShortSpan(t *testing.T) {
	c := &fakeClock{}
	c.set(0)
	w := newLoadWindow(c.now, 0)
	c.set(time.Millisecond)
	w.answer(false)
	if got := w.report(0); !near(got.RPS, 1/loadSlot.Seconds()) {
		t.Errorf("rps %v, want %v", got.RPS, 1/loadSlot.Seconds())
	}
}

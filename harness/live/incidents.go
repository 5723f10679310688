package live

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/reports"
)

// incidents records what the backends and the proxy under test did on
// their own during one strategy: an instance that crashed (a container
// that exited without a scheduled kill, an in-process server whose own
// goroutine panicked), an in-process server that panicked and went on (a
// handler, the sleeper the servers share), a proxy process that exited
// before the harness stopped it. Each becomes an event of the strategy
// (reports.Event kinds crash, panic, proxy-exit) and a line on the job's
// log as it happens. The run goes on: requests to a dead instance or
// through a dead proxy fail, and the numbers show it.
type incidents struct {
	log  io.Writer
	name string // the strategy

	mu     sync.Mutex
	start  time.Time // the attack's start; until then, when watching began
	events []reports.Event
	notes  []string // on the watching itself

	stopFleet    func()       // the fleet's watch; nil when the fleet has none
	stopRotation func()       // the Service's watch (rotation); nil without one
	roller       fleet.Roller // a Deployment's fleet: its notes; nil otherwise
	done         chan struct{}
	wg           sync.WaitGroup
	once         sync.Once
}

// watchIncidents starts watching fl, when it can be watched
// (fleet.Watcher). A watch that cannot start does not stop the strategy:
// it is measured all the same, with a note that crashes may have gone
// unseen.
func watchIncidents(fl fleet.Fleet, job engine.Job) *incidents {
	w := &incidents{log: job.Log, name: job.Name(), start: time.Now(), done: make(chan struct{})}
	if fw, ok := fl.(fleet.Watcher); ok {
		stop, err := fw.Watch(w.crash)
		if err != nil {
			w.notes = append(w.notes, fmt.Sprintf("%s: the backends' crashes were not watched (%v): an instance that died on its own shows only as its errors.", w.name, err))
		} else {
			w.stopFleet = stop
		}
	}
	w.roller, _ = fl.(fleet.Roller)
	if rw, ok := fl.(fleet.RotationWatcher); ok {
		if fleet.ServiceOf(fl) != nil {
			stop, err := rw.WatchRotation(w.rotation)
			if err != nil {
				w.notes = append(w.notes, fmt.Sprintf("%s: the pods' readiness and the Service's endpoints were not watched (%v): no time out of rotation is measured.", w.name, err))
			} else {
				w.stopRotation = stop
			}
		}
	}
	return w
}

// rotation records r, a change in an instance's readiness or endpoint.
func (w *incidents) rotation(r fleet.Rotation) {
	t := w.add(r.Time, reports.Event{Instance: r.Instance, Kind: r.Kind, Detail: r.Detail})
	fmt.Fprintf(w.log, "      instance %d %s at %.1f s\n", r.Instance, r.Kind, t)
}

// note adds a note on the strategy.
func (w *incidents) note(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, s)
}

// begin sets the attack's start, which event times count from.
func (w *incidents) begin(start time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start = start
}

// crash records c.
func (w *incidents) crash(c fleet.Crash) {
	kind, verb := reports.EventCrash, "crashed"
	if !c.Fatal {
		kind, verb = reports.EventPanic, "panicked"
	}
	w.mu.Lock()
	t := c.Time.Sub(w.start).Seconds()
	w.mu.Unlock()
	fmt.Fprintf(w.log, "      instance %d %s at %.1f s: %s\n", c.Instance, verb, t, c.Detail)
	var log []string
	if c.Log != nil {
		log = c.Log()
	}
	w.add(c.Time, reports.Event{Instance: c.Instance, Kind: kind, Detail: c.Detail, Log: log})
}

// skip reports whether a fault operation on instance id that failed with
// err, at elapsed, is to be skipped because the instance had crashed
// (fatally) before; a skip is noted. On nil w, false.
func (w *incidents) skip(id int, elapsed time.Duration, err error) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.Kind == reports.EventCrash && e.Instance == id {
			w.notes = append(w.notes, fmt.Sprintf("%s: at %.1f s the schedule could not act on instance %d, which had crashed at %.1f s (%v); the rest of the schedule went on.",
				w.name, elapsed.Seconds(), id, e.TimeS, err))
			return true
		}
	}
	return false
}

// add records e at time at and returns its time from the start.
func (w *incidents) add(at time.Time, e reports.Event) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.TimeS = at.Sub(w.start).Seconds()
	w.events = append(w.events, e)
	return e.TimeS
}

// watchProxy records the exit of p's process unless the harness stopped
// it. Its exit is noticed at once: the harness is its parent and waits
// for it.
func (w *incidents) watchProxy(p *proxies.Proxy) {
	w.wg.Go(func() {
		select {
		case <-w.done:
			return
		case <-p.Exited():
		}
		at := time.Now()
		status, stopped, log := p.Exit()
		if stopped {
			return
		}
		detail := status + "; every request through it fails from here on"
		t := w.add(at, reports.Event{Instance: reports.ProxyInstance, Kind: reports.EventProxyExit, Detail: detail, Log: log})
		fmt.Fprintf(w.log, "      the proxy exited at %.1f s: %s\n", t, detail)
	})
}

// stop ends the watching; idempotent. No event is recorded after it.
func (w *incidents) stop() {
	w.once.Do(func() {
		if w.stopFleet != nil {
			w.stopFleet()
		}
		if w.stopRotation != nil {
			w.stopRotation()
		}
		close(w.done)
		w.wg.Wait()
	})
}

// addTo stops the watching, merges the events into m's, in time order,
// and adds the notes on the watching.
func (w *incidents) addTo(m *engine.Measurement) {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	m.Notes = append(m.Notes, w.notes...)
	if w.roller != nil {
		m.Notes = append(m.Notes, w.roller.RolloutNotes()...)
	}
	if len(w.events) == 0 {
		return
	}
	m.Events = append(m.Events, w.events...)
	slices.SortStableFunc(m.Events, func(a, b reports.Event) int {
		switch {
		case a.TimeS < b.TimeS:
			return -1
		case a.TimeS > b.TimeS:
			return 1
		}
		return 0
	})
}

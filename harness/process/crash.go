package process

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// panicEvery is the least time between two reported handler panics of one
// instance: a handler that panics on every request would otherwise report
// thousands a second. Those in between are counted in the next report.
const panicEvery = time.Second

// crashes hands the servers' panics to the fleet's watcher. A panic before
// Watch is kept and reported when Watch begins.
type crashes struct {
	mu         sync.Mutex
	report     func(fleet.Crash) // nil when not watched
	pending    []fleet.Crash     // reported before Watch
	lastPanic  []time.Time       // by instance: the last handler panic reported
	suppressed []int             // by instance: handler panics not reported since
}

func newCrashes(n int) *crashes {
	return &crashes{lastPanic: make([]time.Time, n), suppressed: make([]int, n)}
}

// panicked is instance id's Config.OnPanic. A fatal panic (a goroutine of
// the instance's own) stops the instance as a crashed process would stop:
// its listener and connections close, its queued requests are answered
// 503, and from then on a connection to it is refused. A handler's panic
// costs only its request.
func (f *processFleet) panicked(id int, p faultyserver.Panic) {
	now := time.Now()
	stack := stackLines(p.Stack)
	c := fleet.Crash{Instance: id, Time: now, Fatal: p.Fatal, Log: func() []string { return stack }}
	c.Detail = fmt.Sprintf("%v; %s", p, p.Effect)
	if p.Fatal {
		// Reported before the instance stops, so that whatever fails on
		// it from then on can be told apart from a fault of the harness.
		defer f.stopInstance(id)
	} else {
		k := f.crashes
		k.mu.Lock()
		if now.Sub(k.lastPanic[id]) < panicEvery {
			k.suppressed[id]++
			k.mu.Unlock()
			return
		}
		more := k.suppressed[id]
		k.lastPanic[id], k.suppressed[id] = now, 0
		k.mu.Unlock()
		if more > 0 {
			c.Detail += fmt.Sprintf(" (and %d more panics since the last one reported)", more)
		}
	}
	f.crashes.add(c)
}

// stopInstance closes instance id's server and its HTTP server; Close
// closes them again, harmlessly.
func (f *processFleet) stopInstance(id int) {
	f.servers[id].Close()
	_ = f.https[id].Close()
}

func (k *crashes) add(c fleet.Crash) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.report == nil {
		k.pending = append(k.pending, c)
		return
	}
	k.report(c)
}

// Watch implements fleet.Watcher: panics of the fleet's servers. report is
// called on the panicking goroutine, under a lock that stop takes, so it
// is not called after stop returns.
func (f *processFleet) Watch(report func(fleet.Crash)) (stop func(), err error) {
	k := f.crashes
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.report != nil {
		return nil, fmt.Errorf("process backends: the fleet is already watched")
	}
	for _, c := range k.pending {
		report(c)
	}
	k.pending = nil
	k.report = report
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			k.report = nil
			k.mu.Unlock()
		})
	}, nil
}

// stackLines returns the lines of a goroutine stack from the frame that
// panicked on (the runtime's and the recovering function's frames before it
// left out), at most fleet.LogLines of them.
func stackLines(stack []byte) []string {
	lines := strings.Split(strings.TrimSpace(string(stack)), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			// The frame after panic( is the one that called it.
			lines = lines[min(i+2, len(lines)):]
			break
		}
	}
	if len(lines) > fleet.LogLines {
		lines = lines[:fleet.LogLines]
	}
	return lines
}

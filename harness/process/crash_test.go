package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/reports"
)

// panicking is the process provider whose fleets' instance id panics in
// a goroutine of its server once it has served served requests.
type panicking struct {
	process.Provider
	id     int
	served int64
	value  string
}

func (p panicking) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	fl, err := p.Provider.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	c := closing{Fleet: fl, done: make(chan struct{})}
	c.wg.Go(func() {
		ctl := fl.Backends()[p.id].Control
		for {
			select {
			case <-c.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if st, err := ctl.Stats(context.Background()); err == nil && st.Served >= p.served {
				process.PanicIn(fl, p.id, p.value)
				return
			}
		}
	})
	return &c, nil
}

// closing is a fleet that stops its trigger when closed; it forwards
// Watch.
type closing struct {
	fleet.Fleet
	done chan struct{}
	wg   sync.WaitGroup
}

func (c *closing) Close() error {
	close(c.done)
	c.wg.Wait()
	return c.Fleet.Close()
}

func (c *closing) Watch(report func(fleet.Crash)) (func(), error) {
	return c.Fleet.(fleet.Watcher).Watch(report)
}

// TestRunSurvivesServerPanic: a goroutine of instance 1's server panics
// about 1.5 s into a 3 s real run, once it has served 150 requests. The
// harness survives, the instance stops serving (its later requests fail),
// and the crash is an event with its time, the panic value and the stack,
// in summary.json and report.md. The fault scheduled on it at 2.5 s
// cannot reach it: a note, not a failed run.
func TestRunSurvivesServerPanic(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	exp := runtest.MustExperiment(t, "server-panic", `
duration: 3s
rate: 300
timeout: 1s
instances:
  count: 3
  workers: 8
  service: {dist: fixed, value: 2ms}
faults:
  - {instance: 1, at: 2.5s, fault: {mode: fail, status: 503}}
strategies: [round-robin]
`)
	p := panicking{id: 1, served: 150, value: "index out of range in a test"}
	sum, err := harness.Run(t.Context(), exp, harness.Options{Engine: live.New(live.Options{Provider: p})})
	if err != nil {
		t.Fatal(err)
	}
	st := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, st)
	var crash *reports.Event
	for i, e := range st.Events {
		if e.Kind == reports.EventCrash {
			if crash != nil {
				t.Errorf("second crash event %+v", e)
			}
			crash = &st.Events[i]
		}
	}
	if crash == nil {
		t.Fatalf("no crash event in %+v", st.Events)
	}
	t.Logf("crash event: %+v", *crash)
	if crash.Instance != 1 {
		t.Errorf("crash of instance %d, want 1", crash.Instance)
	}
	if crash.TimeS < 0.5 || crash.TimeS > 2.5 {
		t.Errorf("crash at %.3f s, want about 1.5 s into the run", crash.TimeS)
	}
	if !strings.Contains(crash.Detail, p.value) || !strings.Contains(crash.Detail, "stopped serving") {
		t.Errorf("crash detail %q lacks the panic value or what became of the instance", crash.Detail)
	}
	if len(crash.Log) == 0 || !strings.Contains(strings.Join(crash.Log, "\n"), "PanicIn") {
		t.Errorf("crash log %q does not show the panicking frame", crash.Log)
	}
	// Round robin keeps sending a third of the requests to the dead
	// instance: from the second of the crash on they fail (connection
	// refused), and before it none did.
	series := st.Timeline.Instances[1]
	k := int(crash.TimeS / st.Timeline.BucketS)
	for b := range series.Requests {
		switch {
		case b < k && series.Errors[b] != 0:
			t.Errorf("instance 1: %d errors in second %d, before the crash", series.Errors[b], b)
		case b > k && series.Errors[b] != series.Requests[b]:
			t.Errorf("instance 1: %d of %d requests failed in second %d, after the crash; want all", series.Errors[b], series.Requests[b], b)
		}
	}
	for _, id := range []int{0, 2} {
		if in := st.Instances[id]; in.ErrorRatio > 0.05 {
			t.Errorf("instance %d: error ratio %.3f; only instance 1 crashed", id, in.ErrorRatio)
		}
	}
	if !hasNote(sum, "the schedule could not act on instance 1, which had crashed at") {
		t.Errorf("no note on the fault that could not reach the crashed instance, in %q", sum.Notes)
	}
	if !hasNote(sum, "instance 1 crashed at") {
		t.Errorf("no run-level note on the crash in %q", sum.Notes)
	}

	dir := t.TempDir()
	if err := reports.WriteAll(dir, sum); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**instance 1 crashed at ", p.value, "PanicIn"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "instance 1 crashed at ") {
		t.Errorf("report.html lacks the crash")
	}
}

func hasNote(sum *reports.Summary, s string) bool {
	for _, n := range sum.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

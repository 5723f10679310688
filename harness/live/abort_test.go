package live

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/harness/sim"
)

// faultAtClose runs in-process backends and asks each instance for its
// fault just before its fleet closes, after the attack: what a heal left.
type faultAtClose struct {
	process.Provider
	mu     sync.Mutex
	fleets int
	faults []string // every instance's fault mode at close, "" for none
}

func (p *faultAtClose) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	fl, err := p.Provider.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &closeChecked{Fleet: fl, p: p}, nil
}

type closeChecked struct {
	fleet.Fleet
	p *faultAtClose
}

func (f *closeChecked) Close() error {
	f.p.mu.Lock()
	f.p.fleets++
	for _, b := range f.Backends() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		flt, err := b.Control.Fault(ctx)
		cancel()
		switch {
		case err != nil:
			f.p.faults = append(f.p.faults, "error: "+err.Error())
		case flt != nil:
			f.p.faults = append(f.p.faults, flt.Mode())
		default:
			f.p.faults = append(f.p.faults, "")
		}
	}
	f.p.mu.Unlock()
	return f.Fleet.Close()
}

// TestAbortStopsLoadAndHealsFaults: every instance fails (half of them
// from the start, half from 0.5 s), and the abort condition, error ratio
// over 50% in the last 2 s, stops the first strategy's attack within its
// window plus a second; the faults are healed before the fleet goes, the
// other strategies are not run, and the summary says what tripped.
func TestAbortStopsLoadAndHealsFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "abort-all-failing", `
seed: 1
duration: 8s
rate: 300
timeout: 2s
instances: {count: 4, workers: 8, service: {dist: fixed, value: 5ms}}
faults:
  - {instances: [0, 1], at: 0s, fault: {mode: fail, status: 503}}
  - {instances: [2, 3], at: 500ms, fault: {mode: fail, status: 503}}
strategies: [round-robin, p2c, least-inflight]
abort: [{error_ratio: "> 50%", window: 2s}]
`)
	p := &faultAtClose{}
	began := time.Now()
	sum, err := harness.Run(context.Background(), exp, harness.Options{Engine: New(Options{Provider: p}), Log: io.Discard})
	wall := time.Since(began)
	var aborted *harness.Aborted
	if !errors.As(err, &aborted) {
		t.Fatalf("err = %v, want *harness.Aborted", err)
	}
	if sum == nil || sum.Abort == nil {
		t.Fatalf("summary %+v has no abort", sum)
	}
	a := sum.Abort
	t.Logf("tripped at %.3f s: %s (%d results in the window); run took %v", a.AtS, a.Text(), a.Requests, wall)
	if a.Strategy != "round-robin" || a.Metric != "error_ratio" || a.Op != ">" || a.Threshold != 0.5 || a.WindowS != 2 {
		t.Errorf("abort %+v, want round-robin's error_ratio > 0.5 over 2 s", a)
	}
	if a.AtS < 2 || a.AtS > 3 {
		t.Errorf("tripped at %.3f s, want within [2, 3]: its window plus a second", a.AtS)
	}
	if a.Value <= 0.5 || a.Requests < 300 {
		t.Errorf("window value %v over %d results, want > 0.5 over about 600", a.Value, a.Requests)
	}
	if len(sum.Strategies) != 1 {
		t.Fatalf("%d strategies measured, want round-robin only", len(sum.Strategies))
	}
	st := sum.Strategies[0]
	if st.ElapsedS > 3 || !st.Partial {
		t.Errorf("attack ran %.3f s (partial %v), want at most 3 s, partial", st.ElapsedS, st.Partial)
	}
	if !slices.Equal(a.Skipped, []string{"p2c", "least-inflight"}) {
		t.Errorf("skipped %q, want p2c and least-inflight", a.Skipped)
	}
	notes := strings.Join(sum.Notes, "\n")
	for _, want := range []string{
		"p2c: not run: aborted: error_ratio ",
		"least-inflight: not run: aborted: error_ratio ",
		"round-robin: the abort healed the faults of instances 0, 1, 2, 3.",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}

	// The simulator follows the same rule in virtual time.
	simSum, err := harness.Run(context.Background(), exp, harness.Options{Engine: sim.Engine{}, Log: io.Discard})
	if !errors.As(err, &aborted) || simSum.Abort == nil {
		t.Fatalf("sim: err = %v, want *harness.Aborted", err)
	}
	s := simSum.Abort
	t.Logf("sim tripped at %.3f s: %s (%d results in the window)", s.AtS, s.Text(), s.Requests)
	// The real engine judges on a ticker, which a loaded machine delays:
	// the bound is the one the real trip itself has, a second.
	if math.Abs(s.AtS-a.AtS) > 1 || math.Abs(s.Value-a.Value) > 0.1 || !slices.Equal(s.Skipped, a.Skipped) {
		t.Errorf("sim's abort %+v, real's %+v: want the same within 1 s and 0.1", s, a)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fleets != 1 || !slices.Equal(p.faults, []string{"", "", "", ""}) {
		t.Errorf("%d fleets started; faults at close %q, want one fleet with none left", p.fleets, p.faults)
	}
}

// TestAbortUnderThresholdRunsEverything: a condition that never holds
// changes nothing.
func TestAbortUnderThresholdRunsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "abort-quiet", `
duration: 1500ms
rate: 200
instances: {count: 2, service: {dist: fixed, value: 2ms}}
faults: [{instance: 0, at: 0s, fault: {mode: fail, status: 503}}]
strategies: [round-robin, p2c]
abort: [{error_ratio: "> 90%", window: 500ms}, {p99_ms: "> 1000", window: 1s}]
`)
	sum, err := harness.Run(context.Background(), exp, harness.Options{Engine: New(Options{}), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Abort != nil || len(sum.Strategies) != 2 || sum.Strategies[0].Partial {
		t.Errorf("abort %+v, %d strategies: want no abort and both run whole", sum.Abort, len(sum.Strategies))
	}
}

func TestAbortRefusedWithGenerators(t *testing.T) {
	exp := runtest.MustExperiment(t, "abort-spread", `
duration: 2s
rate: 100
generators: 2
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
abort: [{error_ratio: "> 0.5", window: 1s}]
`)
	_, err := New(Options{LbchaosBinary: "lbchaos"}).Check(exp)
	if err == nil || !strings.Contains(err.Error(), "abort: the real engine judges abort conditions in one load generator") {
		t.Errorf("Check = %v, want abort refused with generators", err)
	}
}

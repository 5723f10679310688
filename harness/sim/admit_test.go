package sim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
)

// latencyEngines are the engines a Latency must be honoured by: each
// strategy spec simulated as it is, and calibrated with a fixed overhead.
var latencyEngines = []struct {
	name, strategy string
	cal            *Calibration
	over           time.Duration // the calibration's overhead
}{
	{"plain", "round-robin", nil, 0},
	{"attempts", "round-robin+retry(attempts=2)", nil, 0},
	{"calibrated", "round-robin", fixedOverhead(0.4, 0.5), 400 * time.Microsecond},
	{"attempts calibrated", "round-robin+retry(attempts=2)", fixedOverhead(0.4, 0.5), 400 * time.Microsecond},
}

// latencyFleet is two instances of one worker serving 5 ms, a request
// every 10 ms for a second, each request of it with the given timeout,
// and the faults given (YAML list items).
func latencyFleet(t *testing.T, timeout time.Duration, faults, strategy string) *experiments.Experiment {
	t.Helper()
	return runtest.MustExperiment(t, "latency", fmt.Sprintf(`
duration: 1s
arrival: constant
rate: 100
timeout: %v
instances: {count: 2, workers: 1, service: {dist: fixed, value: 5ms}}
faults:
%sstrategies: [%q]
`, timeout, faults, strategy))
}

const latency50ms = "  - {instance: 0, at: 0s, fault: {mode: latency, per: request, value: 50ms}}\n"

// runAdmit simulates strategy name of exp, calibrated with cal when not
// nil, with the faults of set on their instances from the start besides
// exp's, and returns the simulation, run, and every request's result in
// arrival order. It checks that every instance ended with no worker held
// and nothing queued.
func runAdmit(t *testing.T, exp *experiments.Experiment, name string, cal *Calibration, set map[int]faultyserver.Fault) (*sim, []simResult) {
	t.Helper()
	var rs []simResult
	hooks := simHooks{result: func(o engine.Outcome, so strategies.Outcome) {
		rs = append(rs, simResult{o, so})
	}}
	s, err := newSim(exp, name, hooks, engine.NewEventLog(Epoch))
	if err != nil {
		t.Fatal(err)
	}
	if cal != nil {
		if s.cal, err = newCalibrated(cal, name, exp.Seed); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range set {
		s.insts[i].fault = f
	}
	if s.run(nil) {
		t.Fatal("the simulation was interrupted")
	}
	slices.SortStableFunc(rs, func(a, b simResult) int { return int(a.SentAt - b.SentAt) })
	if want := exp.Duration.Seconds() * exp.Rate; len(rs) != int(want) {
		t.Fatalf("%d requests, want %v", len(rs), want)
	}
	for i := range s.insts {
		if in := &s.insts[i]; in.busy != 0 || in.queue.len() != 0 {
			t.Errorf("instance %d ended with %d workers held, %d queued", i, in.busy, in.queue.len())
		}
	}
	return s, rs
}

func TestSimLatencyHoldsNoWorker(t *testing.T) {
	// One worker per instance, a request to each every 20 ms, 5 ms of
	// service: a request to instance 0 waits 50 ms on its way in, then is
	// served at once. Were the worker held on the way in, requests would
	// queue behind it.
	for _, e := range latencyEngines {
		t.Run(e.name, func(t *testing.T) {
			exp := latencyFleet(t, 250*time.Millisecond, latency50ms, e.strategy)
			s, rs := runAdmit(t, exp, e.strategy, e.cal, nil)
			for k, r := range rs {
				want := 5*time.Millisecond + e.over
				if r.Instance == 0 {
					want += 50 * time.Millisecond
				}
				if !r.Success || r.Latency != want || r.so.Latency != want || r.so.Status != 200 {
					t.Fatalf("request %d to instance %d: latency %v (strategy saw %v), status %d, success %v; want %v, 200",
						k, r.Instance, r.Latency, r.so.Latency, r.so.Status, r.Success, want)
				}
			}
			for i := range s.insts {
				if got := s.insts[i].busyFor; got != 250*time.Millisecond {
					t.Errorf("instance %d: busy for %v, want 250ms (50 requests of 5 ms)", i, got)
				}
			}
		})
	}
}

func TestSimLatencyPastTheTimeout(t *testing.T) {
	// A 30 ms timeout: every request to instance 0 times out on its way
	// in, and is dropped there without ever taking a worker.
	for _, e := range latencyEngines {
		t.Run(e.name, func(t *testing.T) {
			exp := latencyFleet(t, 30*time.Millisecond, latency50ms, e.strategy)
			s, rs := runAdmit(t, exp, e.strategy, e.cal, nil)
			timeouts := 0
			for k, r := range rs {
				switch {
				case r.Instance == 0:
					timeouts++
					if r.Success || !r.Timeout || r.Latency != 30*time.Millisecond || !r.so.Timeout {
						t.Fatalf("request %d to instance 0: latency %v, timeout %v, success %v; want a 30 ms timeout",
							k, r.Latency, r.Timeout, r.Success)
					}
				case !r.Success || r.Latency != 5*time.Millisecond+e.over:
					t.Fatalf("request %d to instance %d: latency %v, success %v", k, r.Instance, r.Latency, r.Success)
				}
			}
			if timeouts != len(rs)/2 {
				t.Errorf("%d timeouts, want %d", timeouts, len(rs)/2)
			}
			if got := s.insts[0].busyFor; got != 0 {
				t.Errorf("instance 0: busy for %v, want 0", got)
			}
		})
	}
}

func TestSimLatencyPerTryTimeout(t *testing.T) {
	// An attempt's per-try timeout runs from its send, through its way in:
	// the first attempt to instance 0 ends at 20 ms, and its retry goes
	// to instance 1 after a backoff under 25 ms.
	const spec = "round-robin+retry(attempts=2,per_try_timeout=20ms,other_host=true)"
	for _, cal := range []*Calibration{nil, fixedOverhead(0.4, 0.5)} {
		t.Run(fmt.Sprintf("calibrated=%v", cal != nil), func(t *testing.T) {
			exp := latencyFleet(t, 250*time.Millisecond, latency50ms, spec)
			s, rs := runAdmit(t, exp, spec, cal, nil)
			retried := 0
			for k, r := range rs {
				if !r.Success || r.Instance != 1 {
					t.Fatalf("request %d: instance %d, success %v, latency %v; want a success of instance 1", k, r.Instance, r.Success, r.Latency)
				}
				if r.Attempts == 2 {
					retried++
					if r.Latency < 25*time.Millisecond || r.Latency >= 60*time.Millisecond {
						t.Errorf("request %d, retried: latency %v, want from 25 to 60 ms", k, r.Latency)
					}
				}
			}
			if retried == 0 {
				t.Error("no request was retried")
			}
			if got := s.insts[0].busyFor; got != 0 {
				t.Errorf("instance 0: busy for %v, want 0", got)
			}
		})
	}
}

// plannedFault plans every request as its action says.
type plannedFault struct{ a faultyserver.Action }

func (plannedFault) Mode() string                                         { return "planned" }
func (plannedFault) Validate() error                                      { return nil }
func (plannedFault) HealthStatus() int                                    { return http.StatusOK }
func (f plannedFault) Plan(time.Duration, *rand.Rand) faultyserver.Action { return f.a }

func TestSimLatencyOfEveryKind(t *testing.T) {
	const lat = 50 * time.Millisecond
	tests := []struct {
		name    string
		a       faultyserver.Action
		latency time.Duration // without the overhead
		status  int
		err     bool
		timeout bool
	}{
		{"fail answers after the latency and its delay", faultyserver.Action{Kind: faultyserver.ActionFail, Status: 502, Delay: 3 * time.Millisecond, Latency: lat}, lat + 3*time.Millisecond, 502, false, false},
		{"reset resets after the latency", faultyserver.Action{Kind: faultyserver.ActionReset, Latency: lat}, lat, 0, true, false},
		{"hang times out from the send", faultyserver.Action{Kind: faultyserver.ActionHang, Latency: lat}, 250 * time.Millisecond, 0, true, true},
		{"serve takes its worker after the latency", faultyserver.Action{Kind: faultyserver.ActionServe, Service: 7 * time.Millisecond, Latency: lat}, lat + 7*time.Millisecond, 200, false, false},
	}
	for _, tt := range tests {
		for _, e := range latencyEngines {
			t.Run(tt.name+"/"+e.name, func(t *testing.T) {
				// Retried only when no connection could be made: never here.
				spec := strings.Replace(e.strategy, "attempts=2", "attempts=2,on=connect", 1)
				exp := latencyFleet(t, 250*time.Millisecond, "", spec)
				s, rs := runAdmit(t, exp, spec, e.cal, map[int]faultyserver.Fault{0: plannedFault{tt.a}})
				want := tt.latency + e.over
				if tt.timeout {
					want = tt.latency
				}
				for k, r := range rs {
					if r.Instance != 0 {
						continue
					}
					if r.Latency != want || r.so.Status != tt.status || (r.so.Err != nil) != tt.err || r.Timeout != tt.timeout {
						t.Fatalf("request %d: latency %v, status %d, err %v, timeout %v; want %v, %d, err %v, timeout %v",
							k, r.Latency, r.so.Status, r.so.Err, r.Timeout, want, tt.status, tt.err, tt.timeout)
					}
				}
				busy := s.insts[0].busyFor
				if served := tt.a.Kind == faultyserver.ActionServe; (busy != 0) != served {
					t.Errorf("instance 0: busy for %v", busy)
				}
			})
		}
	}
}

func TestSimLatencyReordersQueues(t *testing.T) {
	// Under a latency fault that comes and goes, requests reach their
	// instance out of the order they were sent in, and queue so; those
	// timing out are then not always at their queue's front.
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_abandoned=%v", keep), func(t *testing.T) {
			exp := runtest.MustExperiment(t, "reorder", fmt.Sprintf(`
seed: 3
duration: 2s
arrival: poisson
rate: 180
timeout: 60ms
instances: {count: 1, workers: 1, keep_abandoned: %v, service: {dist: exponential, mean: 5ms}}
faults:
  - {instance: 0, at: 0s, until: 300ms, fault: {mode: latency, per: request, value: 40ms}}
  - {instance: 0, at: 600ms, until: 900ms, fault: {mode: latency, per: request, value: 40ms}}
  - {instance: 0, at: 1200ms, until: 1500ms, fault: {mode: latency, per: request, value: 40ms}}
strategies: [round-robin]
`, keep))
			st, rs := traceSim(t, exp, "round-robin")
			var timeouts, ok int
			for _, r := range rs {
				switch {
				case r.Timeout:
					timeouts++
				case r.Success:
					ok++
				}
			}
			if timeouts == 0 || ok == 0 {
				t.Errorf("%d timeouts, %d successes of %d: want some of both", timeouts, ok, st.Requests)
			}
		})
	}
}

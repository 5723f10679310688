package sim

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
)

// TestSimPolicyCalibrated: under a calibration every attempt spends the
// overhead on its way to its instance and back, retries included.
func TestSimPolicyCalibrated(t *testing.T) {
	const name = "round-robin+retry(attempts=2,other_host=true,backoff=1ms)"
	faults := failFault(0) + "  - {instance: 1, at: 0s, fault: {mode: reset}}\n"
	exp := policyFleet(t, 10, 2000, 3*time.Second, time.Second, faults, name, "round-robin+hedge(delay=5ms)")
	var rs []simResult
	hooks := simHooks{result: func(o engine.Outcome, so strategies.Outcome) { rs = append(rs, simResult{o, so}) }}
	m, err := simCalibrated(context.Background(), exp, name, hooks, fixedOverhead(1, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	st := &m.Strategy
	st.Retry = m.Retry
	runtest.CheckAccounting(t, *st)
	checkPolicyAccounting(t, st, rs)
	// A retry lands on the other failing instance now and then.
	if st.ErrorRatio > 0.02 || st.Retry.Retries == 0 {
		t.Errorf("error ratio %v, retry %+v", st.ErrorRatio, *st.Retry)
	}
	for _, r := range rs {
		want := 11 * time.Millisecond // overhead and service
		if !r.Success {
			continue
		}
		if r.Attempts == 2 {
			// A reset after the overhead, or a 503 after 1 ms and the
			// overhead; a backoff under 1 ms.
			if lo := time.Millisecond + want; r.Latency < lo || r.Latency >= lo+2*time.Millisecond {
				t.Fatalf("a retried request took %v, want %v to %v", r.Latency, lo, lo+2*time.Millisecond)
			}
		} else if r.Latency != want {
			t.Fatalf("a request of one attempt took %v, want %v", r.Latency, want)
		}
	}
	// Hedging 5 ms after a send whose answer takes 11 ms hedges every
	// request but those sent to instances 0 and 1, whose 503 and reset come
	// back within 2 ms and, with no other attempt in flight and no retry,
	// end the request.
	// The first attempt of a hedged request answers first.
	hedge := "round-robin+hedge(delay=5ms)"
	m, err = simCalibrated(context.Background(), exp, hedge, simHooks{}, fixedOverhead(1, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	st = &m.Strategy
	t.Logf("%s: error ratio %v, attempts/request %+v, retry %+v", hedge, st.ErrorRatio, *st.AttemptsPerRequest, *m.Retry)
	if a := st.AttemptsPerRequest.Mean; a < 1.75 || a > 1.85 || st.ErrorRatio < 0.18 || st.ErrorRatio > 0.22 ||
		m.Retry.HedgesWon != 0 || m.Retry.Hedges == 0 {
		t.Errorf("%s: attempts per request %+v, error ratio %v, retry %+v", hedge, *st.AttemptsPerRequest, st.ErrorRatio, *m.Retry)
	}
}

// TestSimPolicyGeneratorsMerge: as without a policy, N generators measure
// what one process of N replicas does, attempts and policy counters
// included.
func TestSimPolicyGeneratorsMerge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults string
		strat  string
	}{
		{"fast-fail", failFault(0), "round-robin+retry(attempts=3,other_host=true,budget=20%)"},
		{"slow-instance", "  - {instance: 0, at: 0s, fault: {mode: slow, latency: 300ms}}\n",
			"p2c+hedge(delay=p90)+retry(attempts=2,per_try_timeout=200ms)"},
		// Every instance ejected: requests that reach none.
		{"all-failing", "  - {instances: [0, 1, 2, 3], at: 1s, until: 2s, fault: {mode: fail, status: 503}}\n",
			"p2c+eject(consecutive=5,duration=30s,max=1,success_rate=false)+retry(attempts=3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layout := func(generators, replicas int) *experiments.Experiment {
				exp := policyFleet(t, 4, 500, 4*time.Second, time.Second, tc.faults, tc.strat)
				exp.Generators, exp.Replicas = generators, replicas
				if err := exp.Validate(); err != nil {
					t.Fatal(err)
				}
				return exp
			}
			wantM, wantH := measureStrategy(t, layout(1, 2), tc.strat, false)
			gotM, gotH := measureStrategy(t, layout(2, 1), tc.strat, true)
			if diff := cmp.Diff(string(wantM), string(gotM)); diff != "" {
				t.Errorf("measurement of 2 generators differs from 2 replicas (-replicas +generators):\n%s", diff)
			}
			if !bytes.Equal(wantH, gotH) {
				t.Error("merged histograms of 2 generators differ from 2 replicas'")
			}
			if !bytes.Contains(wantM, []byte(`"Retry": {`)) || !bytes.Contains(wantM, []byte(`"attempts_per_request"`)) {
				t.Errorf("no retry stats or attempts per request in the measurement")
			}
			if tc.name == "all-failing" && !bytes.Contains(wantM, []byte(`"unrouted"`)) {
				t.Errorf("no request reached no instance")
			}
		})
	}
}

// TestSimPolicyNonIdempotent: with idempotent_only (the default) a POST is
// never retried; with idempotent_only=false it is.
func TestSimPolicyNonIdempotent(t *testing.T) {
	const body = `
seed: 3
duration: 4s
rate: 2000
instances: {count: 10, workers: 8, service: {dist: fixed, value: 10ms}}
faults: [{instance: 0, at: 0s, fault: {mode: fail, status: 503}}]
requests: {list: [{method: POST, path: /orders}, {path: /items}]}
strategies:
  - "round-robin+retry(attempts=2,other_host=true)"
  - "round-robin+retry(attempts=2,other_host=true,idempotent_only=false)"
`
	exp := runtest.MustExperiment(t, "post", body)
	for _, tc := range []struct {
		name     string
		min, max float64
	}{
		{"round-robin+retry(attempts=2,other_host=true)", 0.04, 0.06}, // the POSTs, half the requests
		{"round-robin+retry(attempts=2,other_host=true,idempotent_only=false)", 0, 0},
	} {
		st, _ := tracePolicy(t, exp, tc.name)
		t.Logf("%s: error ratio %v, retry %+v", tc.name, st.ErrorRatio, *st.Retry)
		if st.ErrorRatio < tc.min || st.ErrorRatio > tc.max {
			t.Errorf("%s: error ratio %v, want %v to %v", tc.name, st.ErrorRatio, tc.min, tc.max)
		}
	}
}

// TestSimPolicyKeepAbandoned: a cancelled attempt keeps its instance's
// worker until its service ends with keep_abandoned, and frees it at once
// without.
func TestSimPolicyKeepAbandoned(t *testing.T) {
	const name = "round-robin+hedge(delay=20ms)"
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_abandoned=%v", keep), func(t *testing.T) {
			exp := runtest.MustExperiment(t, "keep", fmt.Sprintf(`
duration: 4s
rate: 200
arrival: constant
instances: {count: 4, workers: 4, keep_abandoned: %v, service: {dist: fixed, value: 5ms}}
faults: [{instance: 0, at: 0s, fault: {mode: slow, latency: 100ms}}]
strategies: [%q]
`, keep, name))
			st, rs := tracePolicy(t, exp, name)
			in := st.Instances[0]
			t.Logf("instance 0: %d attempts, %d cancelled, utilization %v; p99 %v ms", in.Requests, in.Cancelled, *in.Utilization, st.LatencyMs.P99)
			if in.Cancelled != in.Requests || st.ErrorRatio != 0 {
				t.Errorf("instance 0: %d of %d attempts cancelled; error ratio %v", in.Cancelled, in.Requests, st.ErrorRatio)
			}
			for _, r := range rs {
				if r.Attempts == 2 && r.Latency != 25*time.Millisecond {
					t.Fatalf("a hedged request took %v, want 25ms", r.Latency)
				}
			}
			// Each attempt to instance 0 holds a worker until the hedge
			// wins (25 ms), or with keep_abandoned its whole service
			// (100 ms; the last ones end after the run's span).
			hold := 25 * time.Millisecond
			if keep {
				hold = 100 * time.Millisecond
			}
			want := float64(in.Requests) * hold.Seconds() / (4 * 4)
			if u := *in.Utilization; u < 0.95*want || u > 1.01*want {
				t.Errorf("instance 0's utilization %v, want about %v", u, want)
			}
		})
	}
}

// TestSimPolicyAbort: an abort stops the attack under a policy too, the
// requests in flight left out as aborted.
func TestSimPolicyAbort(t *testing.T) {
	const name = "round-robin+retry(attempts=2,per_try_timeout=300ms,on=timeout)"
	exp := runtest.MustExperiment(t, "abort", fmt.Sprintf(`
duration: 6s
rate: 200
timeout: 500ms
instances: {count: 2, service: {dist: fixed, value: 5ms}}
faults: [{instances: [0, 1], at: 0s, fault: {mode: hang}}]
abort: [{timeout_ratio: "> 0.5", window: 1s}]
strategies: [%q]
`, name))
	m, err := simStrategy(context.Background(), exp, name, simHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Abort == nil || m.Aborted == 0 || !m.Interrupted {
		t.Fatalf("abort %+v, %d aborted, interrupted %v", m.Abort, m.Aborted, m.Interrupted)
	}
	t.Logf("aborted at %v s: %d requests, %d aborted, retry %+v", m.Abort.AtS, m.Strategy.Requests, m.Aborted, *m.Retry)
	if m.Strategy.TimeoutRatio != 1 || m.Retry.Retries == 0 {
		t.Errorf("timeout ratio %v, retry %+v", m.Strategy.TimeoutRatio, *m.Retry)
	}
}

// TestSimPolicyImmediateFailures: a reset and a full queue's 503 fail an
// attempt as it is sent, and it is retried after its backoff.
func TestSimPolicyImmediateFailures(t *testing.T) {
	const name = "round-robin+retry(attempts=2,other_host=true)"
	exp := runtest.MustExperiment(t, "now", fmt.Sprintf(`
duration: 3s
rate: 1000
instances: {count: 4, workers: 1, queue_limit: 1, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: reset}}
  - {instance: 1, at: 0s, fault: {mode: slow, latency: 50ms}}
strategies: [%q]
`, name))
	st, rs := tracePolicy(t, exp, name)
	t.Logf("error ratio %v, attempts/request %+v, retry %+v", st.ErrorRatio, *st.AttemptsPerRequest, *st.Retry)
	if in := st.Instances[0]; in.Errors != in.Requests || in.Requests == 0 {
		t.Errorf("instance 0: %d errors of %d attempts", in.Errors, in.Requests)
	}
	if in := st.Instances[1]; in.Errors == 0 {
		t.Errorf("instance 1's full queue answered no 503")
	}
	for _, r := range rs {
		if r.Attempts == 2 && r.Instance > 1 && (!r.Success || r.Latency < time.Millisecond || r.Latency >= 26*time.Millisecond) {
			t.Fatalf("a retried request ended at instance %d after %v, success %v", r.Instance, r.Latency, r.Success)
		}
	}
}

// TestSimPolicyDeadline: a backoff that reaches the deadline ends the
// request as a timeout there, releasing its place in the concurrency
// budget; a failure answered at the deadline is a timeout too.
func TestSimPolicyDeadline(t *testing.T) {
	const name = "round-robin+retry(attempts=2,backoff=200ms,concurrency_budget=100%,min_concurrency=1000)"
	exp := runtest.MustExperiment(t, "deadline", fmt.Sprintf(`
duration: 5s
rate: 1000
arrival: constant
timeout: 100ms
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults:
  - {instances: [0, 1], at: 0s, fault: {mode: fail, status: 503, delay: 10ms}}
strategies: [%q]
`, name))
	st, rs := tracePolicy(t, exp, name)
	t.Logf("timeout ratio %v, attempts/request %+v, retry %+v", st.TimeoutRatio, *st.AttemptsPerRequest, *st.Retry)
	var atDeadline, retried int
	for _, r := range rs {
		switch r.Attempts {
		case 1:
			atDeadline++
			if r.Latency != 100*time.Millisecond || !r.Timeout {
				t.Fatalf("a request whose backoff reached the deadline ended after %v, timeout %v", r.Latency, r.Timeout)
			}
		case 2:
			retried++
			// Its 503, or the deadline when that comes first.
			answered := r.Latency >= 20*time.Millisecond && r.Latency < 100*time.Millisecond && r.so.Status == 503 && !r.Timeout
			if !answered && (r.Latency != 100*time.Millisecond || !r.Timeout) {
				t.Fatalf("a retried request ended after %v with %d, timeout %v", r.Latency, r.so.Status, r.Timeout)
			}
		}
	}
	// Backoffs are uniform below 200 ms; those from 90 ms on reach the
	// deadline. A leaked budget place would soon refuse every retry.
	if atDeadline < 2000 || retried < 2000 || st.Retry.RetriesRefused != 0 {
		t.Errorf("%d requests ended at the deadline, %d retried; %d retries refused", atDeadline, retried, st.Retry.RetriesRefused)
	}

	exp = runtest.MustExperiment(t, "deadline", `
duration: 1s
rate: 100
timeout: 100ms
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults:
  - {instances: [0, 1], at: 0s, fault: {mode: fail, status: 503, delay: 100ms}}
strategies: ["round-robin+retry(attempts=3)", round-robin]
`)
	st, rs = tracePolicy(t, exp, "round-robin+retry(attempts=3)")
	if st.TimeoutRatio != 1 || st.Retry.Retries != 0 || rs[0].Latency != 100*time.Millisecond {
		t.Errorf("timeout ratio %v, retry %+v, latency %v; want every request a timeout at 100 ms, no retry", st.TimeoutRatio, *st.Retry, rs[0].Latency)
	}
	if plain, _ := traceSim(t, exp, "round-robin"); plain.TimeoutRatio != 0 || plain.ErrorRatio != 1 {
		t.Errorf("round-robin: timeout ratio %v, error ratio %v; want 503s at the deadline", plain.TimeoutRatio, plain.ErrorRatio)
	}
}

package sim

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// tracePolicy simulates strategy name of exp, one with a retry or hedge
// policy, and returns its summary (with its events) and every request's
// result. It checks the accounting of attempts: the instances received
// every attempt the timeline counts, and the requests made them.
func tracePolicy(t *testing.T, exp *experiments.Experiment, name string) (*reports.Strategy, []simResult) {
	t.Helper()
	var rs []simResult
	hooks := simHooks{result: func(o engine.Outcome, so strategies.Outcome) {
		rs = append(rs, simResult{o, so})
	}}
	m, err := simStrategy(context.Background(), exp, name, hooks)
	if err != nil {
		t.Fatal(err)
	}
	st := &m.Strategy
	st.Ejections, st.Events, st.Retry = m.Ejections, m.Events, m.Retry
	runtest.CheckAccounting(t, *st)
	checkPolicyAccounting(t, st, rs)
	return st, rs
}

// checkPolicyAccounting asserts that a strategy measured by attempts
// counts the attempts its requests made.
func checkPolicyAccounting(t *testing.T, st *reports.Strategy, rs []simResult) {
	t.Helper()
	if st.AttemptsPerRequest == nil || st.Retry == nil {
		t.Fatalf("%s: attempts_per_request %v, retry %v: want both", st.Name, st.AttemptsPerRequest, st.Retry)
	}
	if got, want := st.Requests, int64(len(rs)); got != want {
		t.Fatalf("%s: summary counts %d requests, %d results reported", st.Name, got, want)
	}
	var attempts, offered, timeline, share int64
	var shares float64
	for _, r := range rs {
		attempts += int64(r.Attempts)
	}
	for _, n := range st.Timeline.Offered {
		offered += n
	}
	for _, n := range st.Timeline.Attempts {
		timeline += n
	}
	for _, in := range st.Instances {
		share += in.Requests
		shares += in.Share
		if in.Attempts == nil || *in.Attempts != in.Requests {
			t.Errorf("%s: instance %d: attempts %v, requests %d", st.Name, in.ID, in.Attempts, in.Requests)
		}
		var series int64
		for _, n := range st.Timeline.Instances[in.ID].Requests {
			series += n
		}
		if series != in.Requests {
			t.Errorf("%s: instance %d: timeline has %d attempts, total %d", st.Name, in.ID, series, in.Requests)
		}
	}
	if offered != st.Requests {
		t.Errorf("%s: timeline offers %d requests, want %d", st.Name, offered, st.Requests)
	}
	if timeline != attempts || share != attempts {
		t.Errorf("%s: requests made %d attempts; the timeline counts %d, the instances %d", st.Name, attempts, timeline, share)
	}
	if attempts > 0 && math.Abs(shares-1) > 1e-3 {
		t.Errorf("%s: instance shares add up to %v", st.Name, shares)
	}
	if want := float64(attempts) / float64(len(rs)); len(rs) > 0 && math.Abs(st.AttemptsPerRequest.Mean-want) > 1e-9 {
		t.Errorf("%s: attempts_per_request.mean %v, want %v", st.Name, st.AttemptsPerRequest.Mean, want)
	}
}

// policyFleet is an experiment of n instances (8 workers, 10 ms) at rate
// for duration, with the given faults (YAML list items) and strategies.
func policyFleet(t *testing.T, n int, rate float64, duration, timeout time.Duration, faults string, strats ...string) *experiments.Experiment {
	t.Helper()
	body := fmt.Sprintf("seed: 1\nduration: %v\narrival: poisson\nrate: %v\ntimeout: %v\n"+
		"instances: {count: %d, workers: 8, service: {dist: fixed, value: 10ms}}\nfaults:\n%sstrategies:\n",
		duration, rate, timeout, n, faults)
	for _, s := range strats {
		body += fmt.Sprintf("  - %q\n", s)
	}
	return runtest.MustExperiment(t, "policy", body)
}

func failFault(inst int) string {
	return fmt.Sprintf("  - {instance: %d, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}\n", inst)
}

func TestSimRetryFastFail(t *testing.T) {
	const (
		rr      = "round-robin+retry(attempts=2,other_host=true)"
		random  = "random+retry(attempts=2)"
		noRetry = "round-robin"
	)
	exp := policyFleet(t, 10, 4000, 10*time.Second, 2*time.Second, failFault(0), rr, random, noRetry)

	st, rs := tracePolicy(t, exp, rr)
	t.Logf("%s: error ratio %.5f, attempts/request %+v, retry %+v, instance 0 share %.4f",
		rr, st.ErrorRatio, *st.AttemptsPerRequest, *st.Retry, st.Instances[0].Share)
	if st.ErrorRatio >= 0.001 {
		t.Errorf("%s: error ratio %v, want < 0.1%%", rr, st.ErrorRatio)
	}
	if m := st.AttemptsPerRequest.Mean; m < 1.08 || m > 1.14 {
		t.Errorf("%s: %v attempts per request, want about 1.1", rr, m)
	}
	if st.AttemptsPerRequest.Max != 2 {
		t.Errorf("%s: at most %d attempts per request, want 2", rr, st.AttemptsPerRequest.Max)
	}
	// Instance 0 gets the first attempts of a tenth of the requests
	// (retries, which avoid it, do not move round robin's turn), every one
	// a 503, and each of them is retried elsewhere: its share of the
	// attempts is 1/11.
	if n := float64(st.Instances[0].Requests) / float64(st.Requests); n < 0.095 || n > 0.105 {
		t.Errorf("%s: instance 0 had %v attempts per request, want about 0.1", rr, n)
	}
	if sh := st.Instances[0].Share; math.Abs(sh-1.0/11) > 0.005 {
		t.Errorf("%s: instance 0's share of the attempts %v, want about 1/11", rr, sh)
	}
	if in := st.Instances[0]; in.Errors != in.Requests || st.Retry.Retries != in.Requests {
		t.Errorf("%s: instance 0 failed %d of %d attempts; %d retries", rr, in.Errors, in.Requests, st.Retry.Retries)
	}
	for _, r := range rs {
		if r.Attempts == 2 && (r.Instance == 0 || !r.Success) {
			t.Fatalf("%s: a retried request ended at instance %d, success %v", rr, r.Instance, r.Success)
		}
	}

	st, _ = tracePolicy(t, exp, random)
	t.Logf("%s: error ratio %.5f, attempts/request %+v", random, st.ErrorRatio, *st.AttemptsPerRequest)
	if st.ErrorRatio < 0.005 || st.ErrorRatio > 0.02 {
		t.Errorf("%s: error ratio %v, want 0.5%% to 2%%", random, st.ErrorRatio)
	}

	plain, _ := traceSim(t, exp, noRetry)
	t.Logf("%s: error ratio %.5f", noRetry, plain.ErrorRatio)
	if plain.ErrorRatio < 0.09 || plain.ErrorRatio > 0.11 {
		t.Errorf("%s: error ratio %v, want about 10%%", noRetry, plain.ErrorRatio)
	}
	if plain.Retry != nil || plain.AttemptsPerRequest == nil || plain.AttemptsPerRequest.Max != 1 {
		t.Errorf("%s: retry %v, attempts per request %+v: want none, and 1", noRetry, plain.Retry, plain.AttemptsPerRequest)
	}
}

func TestSimRetryAllFailing(t *testing.T) {
	const name = "round-robin+retry(attempts=3)"
	faults := failFault(0) + failFault(1) + failFault(2)
	exp := policyFleet(t, 3, 600, 5*time.Second, 2*time.Second, faults, name)
	st, rs := tracePolicy(t, exp, name)
	t.Logf("attempts/request %+v, retry %+v", *st.AttemptsPerRequest, *st.Retry)
	if a := st.AttemptsPerRequest; a.Mean != 3 || a.Max != 3 || a.P99 != 3 {
		t.Errorf("attempts per request %+v, want 3", *a)
	}
	if st.ErrorRatio != 1 || st.Retry.Retries != 2*st.Requests || st.Retry.RetriesRefused != 0 {
		t.Errorf("error ratio %v, %d retries of %d requests, %d refused", st.ErrorRatio, st.Retry.Retries, st.Requests, st.Retry.RetriesRefused)
	}
	for _, in := range st.Instances {
		if in.Errors != in.Requests || math.Abs(in.Share-1.0/3) > 0.01 {
			t.Errorf("instance %d: %d errors of %d attempts, share %v", in.ID, in.Errors, in.Requests, in.Share)
		}
	}
	var offered, attempts int64
	for b := range st.Timeline.Offered {
		offered += st.Timeline.Offered[b]
		attempts += st.Timeline.Attempts[b]
		// Backoffs carry a few retries over into the next second.
		if o, a := st.Timeline.Offered[b], st.Timeline.Attempts[b]; o > 0 && math.Abs(float64(a)/float64(o)-3) > 0.1 {
			t.Errorf("second %d: %d attempts of %d requests, want 3 each", b, a, o)
		}
	}
	if attempts != 3*offered {
		t.Errorf("%d attempts of %d requests, want 3 each", attempts, offered)
	}
	for _, r := range rs {
		// 1 ms per attempt, plus backoffs below 25 ms and 50 ms.
		if r.Latency < 3*time.Millisecond || r.Latency >= 78*time.Millisecond || r.so.Status != 503 {
			t.Fatalf("request took %v and ended %d, want 3 ms to 78 ms and a 503", r.Latency, r.so.Status)
		}
	}
}

func TestSimRetryBudget(t *testing.T) {
	const name = "round-robin+retry(attempts=3,budget=20%,min_per_s=0)"
	faults := failFault(0) + failFault(1) + failFault(2)
	exp := policyFleet(t, 3, 600, 20*time.Second, 2*time.Second, faults, name)
	st, _ := tracePolicy(t, exp, name)
	t.Logf("attempts/request %+v, retry %+v, events %d", *st.AttemptsPerRequest, *st.Retry, len(st.Events))
	if m := st.AttemptsPerRequest.Mean; m > 1.205 || m < 1.15 {
		t.Errorf("%v attempts per request, want about 1.2", m)
	}
	// After the first window every second stays within the budget.
	for b := 10; b < len(st.Timeline.Offered); b++ {
		if o, a := st.Timeline.Offered[b], st.Timeline.Attempts[b]; float64(a) > 1.25*float64(o) {
			t.Errorf("second %d: %d attempts of %d requests", b, a, o)
		}
	}
	if st.Retry.RetriesRefused == 0 {
		t.Error("no retry refused")
	}
	exhausted := 0
	for _, e := range st.Events {
		if e.Kind == strategies.EventBudget && e.Detail == "exhausted" {
			exhausted++
		}
	}
	if exhausted == 0 {
		t.Errorf("no budget exhausted event in %d events", len(st.Events))
	}
}

func TestSimHedgeSlowInstance(t *testing.T) {
	const (
		hedge = "round-robin+hedge(delay=20ms)"
		plain = "round-robin"
	)
	fault := "  - {instance: 0, at: 0s, fault: {mode: slow, latency: 1s}}\n"
	exp := policyFleet(t, 10, 4000, 10*time.Second, 30*time.Second, fault, hedge, plain)
	st, rs := tracePolicy(t, exp, hedge)
	base, _ := traceSim(t, exp, plain)
	extra := float64(*sumAttempts(st))/float64(st.Requests) - 1
	t.Logf("%s: p99 %.1f ms (%s: %.1f ms), %.2f%% extra attempts, retry %+v, instance 0 cancelled %d of %d",
		hedge, st.LatencyMs.P99, plain, base.LatencyMs.P99, 100*extra, *st.Retry, st.Instances[0].Cancelled, st.Instances[0].Requests)
	if st.LatencyMs.P99 > base.LatencyMs.P99/5 {
		t.Errorf("%s: p99 %v ms, %s's %v ms: want at most a fifth", hedge, st.LatencyMs.P99, plain, base.LatencyMs.P99)
	}
	if extra <= 0 || extra >= 0.12 {
		t.Errorf("%s: %.2f%% extra attempts, want under 12%%", hedge, 100*extra)
	}
	if st.Retry.HedgesWon == 0 || st.Retry.Hedges < st.Retry.HedgesWon {
		t.Errorf("%s: retry %+v, want hedges won", hedge, *st.Retry)
	}
	if in := st.Instances[0]; in.Cancelled == 0 || in.Errors != 0 {
		t.Errorf("%s: instance 0: %d cancelled, %d errors; want cancelled attempts, no errors", hedge, in.Cancelled, in.Errors)
	}
	if st.ErrorRatio != 0 {
		t.Errorf("%s: error ratio %v", hedge, st.ErrorRatio)
	}
	for _, r := range rs {
		if r.Attempts == 2 && (r.Latency < 20*time.Millisecond || r.Instance == 0) {
			t.Fatalf("%s: a hedged request took %v and ended at instance %d", hedge, r.Latency, r.Instance)
		}
	}
}

// sumAttempts is the attempts a strategy's instances received.
func sumAttempts(st *reports.Strategy) *int64 {
	var n int64
	for _, in := range st.Instances {
		n += *in.Attempts
	}
	return &n
}

func TestSimPerTryTimeout(t *testing.T) {
	const name = "round-robin+retry(attempts=2,per_try_timeout=50ms,on=timeout,other_host=true)"
	fault := "  - {instance: 0, at: 0s, fault: {mode: hang}}\n"
	exp := policyFleet(t, 10, 2000, 5*time.Second, time.Second, fault, name, "round-robin")
	st, rs := tracePolicy(t, exp, name)
	t.Logf("%s: error ratio %.5f, attempts/request %+v, retry %+v, instance 0 timeouts %d",
		name, st.ErrorRatio, *st.AttemptsPerRequest, *st.Retry, st.Instances[0].Timeouts)
	if st.ErrorRatio > 0.0005 {
		t.Errorf("error ratio %v, want near zero", st.ErrorRatio)
	}
	if in := st.Instances[0]; in.Timeouts != in.Requests || in.Timeouts == 0 {
		t.Errorf("instance 0: %d timeouts of %d attempts", in.Timeouts, in.Requests)
	}
	retried := 0
	for _, r := range rs {
		if r.Attempts != 2 {
			continue
		}
		retried++
		// 50 ms, a backoff under 25 ms, and 10 ms of service.
		if r.Latency < 60*time.Millisecond || r.Latency >= 85*time.Millisecond || !r.Success {
			t.Fatalf("a retried request took %v (success %v), want 60 to 85 ms", r.Latency, r.Success)
		}
	}
	if retried == 0 {
		t.Error("no request retried")
	}
	plain, _ := traceSim(t, exp, "round-robin")
	if plain.ErrorRatio < 0.09 {
		t.Errorf("round-robin: error ratio %v, want about 10%%", plain.ErrorRatio)
	}
}

func TestSimPolicyDeterministic(t *testing.T) {
	exp := policyFleet(t, 10, 2000, 3*time.Second, time.Second,
		failFault(0)+"  - {instance: 1, at: 0s, fault: {mode: slow, latency: 200ms}}\n",
		"random+retry(attempts=3,budget=20%)", "p2c+hedge(delay=p90)+retry(attempts=2,per_try_timeout=100ms)",
		"round-robin")
	a, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if summaryJSON(t, a) != summaryJSON(t, b) {
		t.Error("the same seed gave different summaries")
	}
	for _, st := range a.Strategies {
		if st.Retry == nil && st.Name != "round-robin" {
			t.Errorf("%s: no retry stats", st.Name)
		}
	}
}

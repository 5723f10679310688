package strategies

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newPolicy builds spec for n endpoints on clock and returns the Balancer
// and its Policy, which must exist.
func newPolicy(t testing.TB, spec string, n int, clock *fakeClock, events func(Event)) (*Balancer, *Policy) {
	t.Helper()
	b, err := New(spec, Env{N: n, Rand: newRand(1), Clock: clock, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	p := b.Policy()
	if p == nil {
		t.Fatalf("New(%q).Policy() = nil", spec)
	}
	return b, p
}

// retryConfigOf parses spec, whose last wrapper is a retry, and returns
// that wrapper's configuration.
func retryConfigOf(t *testing.T, spec string) RetryConfig {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	cfg, err := parseRetryConfig(s.Wrappers[len(s.Wrappers)-1].Params)
	if err != nil {
		t.Fatalf("parseRetryConfig of %q: %v", spec, err)
	}
	return cfg
}

func TestRetryParse(t *testing.T) {
	defaults := RetryConfig{
		Attempts: 3, On: []string{Retry5xx}, Backoff: 25 * time.Millisecond, MaxBackoff: 250 * time.Millisecond,
		IdempotentOnly: true, MinPerS: 10, BudgetWindow: 10 * time.Second, MinConcurrency: 3,
	}
	with := func(f func(*RetryConfig)) RetryConfig {
		c := defaults
		c.On = slices.Clone(defaults.On)
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name, spec string
		want       RetryConfig
	}{
		{"defaults", "round-robin+retry", defaults},
		{"empty parentheses", "round-robin+retry()", defaults},
		{"one attempt", "p2c+retry(attempts=1)", with(func(c *RetryConfig) { c.Attempts = 1 })},
		{"most attempts", "p2c+retry(attempts=100)", with(func(c *RetryConfig) { c.Attempts = 100 })},
		{"conditions in the order given, once each", "p2c+retry(on=timeout|connect|timeout)",
			with(func(c *RetryConfig) { c.On = []string{RetryTimeout, RetryConnect} })},
		{"max_backoff defaults to 10 × backoff", "p2c+retry(backoff=10ms)",
			with(func(c *RetryConfig) { c.Backoff, c.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond })},
		{"max_backoff equal to backoff", "p2c+retry(backoff=10ms,max_backoff=10ms)",
			with(func(c *RetryConfig) { c.Backoff, c.MaxBackoff = 10*time.Millisecond, 10*time.Millisecond })},
		{"budget as a fraction", "p2c+retry(budget=0.2)", with(func(c *RetryConfig) { c.Budget = 0.2 })},
		{"budget of 100%", "p2c+retry(budget=100%)", with(func(c *RetryConfig) { c.Budget = 1 })},
		{"reserve off", "p2c+retry(budget=20%,min_per_s=0)", with(func(c *RetryConfig) { c.Budget, c.MinPerS = 0.2, 0 })},
		{"bool spellings", "p2c+retry(other_host=yes,idempotent_only=off)",
			with(func(c *RetryConfig) { c.OtherHost, c.IdempotentOnly = true, false })},
		{
			"every parameter",
			"round-robin+retry(attempts=5,on=5xx|gateway-error|reset|connect|timeout,per_try_timeout=200ms," +
				"backoff=10ms,max_backoff=1s,other_host=true,idempotent_only=false,budget=20%,min_per_s=5," +
				"budget_window=30s,concurrency_budget=50%,min_concurrency=2)",
			RetryConfig{
				Attempts: 5, On: []string{Retry5xx, RetryGatewayError, RetryReset, RetryConnect, RetryTimeout},
				PerTryTimeout: 200 * time.Millisecond, Backoff: 10 * time.Millisecond, MaxBackoff: time.Second,
				OtherHost: true, IdempotentOnly: false, Budget: 0.2, MinPerS: 5, BudgetWindow: 30 * time.Second,
				ConcurrencyBudget: 0.5, MinConcurrency: 2,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, retryConfigOf(t, tc.spec)); diff != "" {
				t.Errorf("config of %q (-want +got):\n%s", tc.spec, diff)
			}
		})
	}
}

func TestRetryParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"attempts 0", "p2c+retry(attempts=0)", `retry: attempts: want an integer >= 1, got "0"`},
		{"attempts not a number", "p2c+retry(attempts=x)", `retry: attempts: want an integer >= 1, got "x"`},
		{"too many attempts", "p2c+retry(attempts=101)", `retry: attempts: want at most 100, got 101`},
		{"unknown condition", "p2c+retry(on=5xx|teapot)", `retry: on: unknown condition "teapot" (known: 5xx, gateway-error, reset, connect, timeout, joined by |)`},
		{"Envoy's spelling of connect", "p2c+retry(on=connect-failure)", `retry: on: unknown condition "connect-failure" (known: 5xx, gateway-error, reset, connect, timeout, joined by |)`},
		{"empty condition", "p2c+retry(on=5xx||reset)", `retry: on: unknown condition "" (known: 5xx, gateway-error, reset, connect, timeout, joined by |)`},
		{"per_try_timeout 0", "p2c+retry(per_try_timeout=0s)", `retry: per_try_timeout: want a duration > 0, got "0s"`},
		{"backoff not a duration", "p2c+retry(backoff=25)", `retry: backoff: want a duration like "5s", got "25"`},
		{"max_backoff < default backoff", "p2c+retry(max_backoff=10ms)", `retry: max_backoff: 10ms is shorter than backoff (25ms)`},
		{"max_backoff < backoff", "p2c+retry(backoff=100ms,max_backoff=50ms)", `retry: max_backoff: 50ms is shorter than backoff (100ms)`},
		{"other_host not a bool", "p2c+retry(other_host=maybe)", `retry: other_host: want true or false, got "maybe"`},
		{"idempotent_only not a bool", "p2c+retry(idempotent_only=2)", `retry: idempotent_only: want true or false, got "2"`},
		{"budget 0%", "p2c+retry(budget=0%)", `retry: budget: want a share in (0, 100%], like 20%, got "0%"`},
		{"budget 150%", "p2c+retry(budget=150%)", `retry: budget: want a share in (0, 100%], like 20%, got "150%"`},
		{"budget abc", "p2c+retry(budget=abc)", `retry: budget: want a share in (0, 100%], like 20%, got "abc"`},
		{"budget without %", "p2c+retry(budget=20)", `retry: budget: want a share in (0, 100%], like 20%, got "20"`},
		{"budget NaN", "p2c+retry(budget=NaN%)", `retry: budget: want a share in (0, 100%], like 20%, got "NaN%"`},
		{"budget negative", "p2c+retry(budget=-5%)", `retry: budget: want a share in (0, 100%], like 20%, got "-5%"`},
		{"min_per_s negative", "p2c+retry(budget=20%,min_per_s=-1)", `retry: min_per_s: want an integer >= 0, got "-1"`},
		{"budget_window 500ms", "p2c+retry(budget=20%,budget_window=500ms)", `retry: budget_window: want 1s to 60s, as Finagle's ttl, got 500ms`},
		{"budget_window 61s", "p2c+retry(budget=20%,budget_window=61s)", `retry: budget_window: want 1s to 60s, as Finagle's ttl, got 1m1s`},
		{"min_per_s without budget", "p2c+retry(min_per_s=5)", `retry: min_per_s: sets the budget's reserve, but no budget is given; add budget=20% (a share of requests)`},
		{"budget_window without budget", "p2c+retry(budget_window=5s)", `retry: budget_window: sets the budget's reserve, but no budget is given; add budget=20% (a share of requests)`},
		{"concurrency_budget 0%", "p2c+retry(concurrency_budget=0%)", `retry: concurrency_budget: want a share in (0, 100%], like 20%, got "0%"`},
		{"concurrency_budget 101%", "p2c+retry(concurrency_budget=101%)", `retry: concurrency_budget: want a share in (0, 100%], like 20%, got "101%"`},
		{"min_concurrency negative", "p2c+retry(concurrency_budget=20%,min_concurrency=-1)", `retry: min_concurrency: want an integer >= 0, got "-1"`},
		{"min_concurrency without concurrency_budget", "p2c+retry(min_concurrency=2)", `retry: min_concurrency: sets the concurrency budget's floor, but no concurrency_budget is given; add concurrency_budget=20%`},
		{"min_concurrency with the other budget", "p2c+retry(budget=20%,min_concurrency=2)", `retry: min_concurrency: sets the concurrency budget's floor, but no concurrency_budget is given; add concurrency_budget=20%`},
		{"unknown parameter", "p2c+retry(retries=2)", `retry: unknown parameter "retries" (allowed: attempts, on, per_try_timeout, backoff, max_backoff, other_host, idempotent_only, budget, min_per_s, budget_window, concurrency_budget, min_concurrency)`},
		{"given twice", "p2c+retry+retry", `wrapper "retry" given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParse(t, tc.spec, tc.want) })
	}
}

// refusedDial returns the error of a real TCP dial to a port nothing
// listens on.
func refusedDial(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Skipf("%s accepted a connection after its listener closed", addr)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("dial to a closed port: %T %v, want a *net.OpError of a dial", err, err)
	}
	return err
}

func TestIsConnectError(t *testing.T) {
	dial := refusedDial(t)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ErrConnect", ErrConnect, true},
		{"wrapped ErrConnect", fmt.Errorf("attempt 2: %w", ErrConnect), true},
		{"ECONNREFUSED", syscall.ECONNREFUSED, true},
		{"real refused dial", dial, true},
		{"real dial in a url.Error", &url.Error{Op: "Get", URL: "http://10.0.0.1/", Err: dial}, true},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"ECONNRESET", syscall.ECONNRESET, false},
		{"reset on read", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"EOF", errors.New("EOF"), false},
		{"same text, another error", errors.New("connection refused"), false},
		{"context deadline", context.DeadlineExceeded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsConnectError(tc.err); got != tc.want {
				t.Errorf("IsConnectError(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestRetryConditions runs every kind of outcome through a policy retrying
// each condition alone: Retry allows the retry exactly when the condition
// covers the outcome.
func TestRetryConditions(t *testing.T) {
	dial := refusedDial(t)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	conds := []string{Retry5xx, RetryGatewayError, RetryReset, RetryConnect, RetryTimeout}
	// want lists the conditions that retry the outcome.
	for _, tc := range []struct {
		name string
		o    Outcome
		want []string
	}{
		{"503", Outcome{Status: 503}, []string{Retry5xx, RetryGatewayError}},
		{"500", Outcome{Status: 500}, []string{Retry5xx}},
		{"502", Outcome{Status: 502}, []string{Retry5xx, RetryGatewayError}},
		{"504", Outcome{Status: 504}, []string{Retry5xx, RetryGatewayError}},
		{"501", Outcome{Status: 501}, []string{Retry5xx}},
		{"404", Outcome{Status: 404}, nil},
		{"429", Outcome{Status: 429}, nil},
		{"200", Outcome{Status: 200}, nil},
		{"no answer, no error", Outcome{}, nil},
		{"reset", Outcome{Err: reset}, []string{Retry5xx, RetryGatewayError, RetryReset}},
		{"EOF before an answer", Outcome{Err: errors.New("EOF")}, []string{Retry5xx, RetryGatewayError, RetryReset}},
		{"ErrConnect", Outcome{Err: ErrConnect}, []string{Retry5xx, RetryGatewayError, RetryConnect}},
		{"real refused dial", Outcome{Err: dial}, []string{Retry5xx, RetryGatewayError, RetryConnect}},
		{"ECONNREFUSED", Outcome{Err: syscall.ECONNREFUSED}, []string{Retry5xx, RetryGatewayError, RetryConnect}},
		// A dial that timed out is a connect failure (Envoy's connect
		// timeout), and, as every attempt the client timed out, a reset
		// and a timeout.
		{"dial timed out", Outcome{Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, Timeout: true},
			[]string{Retry5xx, RetryGatewayError, RetryReset, RetryConnect, RetryTimeout}},
		{"dial timed out, not the client's timeout", Outcome{Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}},
			[]string{Retry5xx, RetryGatewayError, RetryConnect}},
		{"per-try timeout", Outcome{Err: context.DeadlineExceeded, Timeout: true},
			[]string{Retry5xx, RetryGatewayError, RetryReset, RetryTimeout}},
		{"per-try timeout without an error", Outcome{Timeout: true},
			[]string{Retry5xx, RetryGatewayError, RetryReset, RetryTimeout}},
		{"cancelled 503", Outcome{Status: 503, Cancelled: true}, nil},
		{"cancelled before an answer", Outcome{Err: context.Canceled, Cancelled: true}, nil},
		{"cancelled at its timeout", Outcome{Err: context.DeadlineExceeded, Timeout: true, Cancelled: true}, nil},
	} {
		for _, on := range conds {
			t.Run(tc.name+"/on="+on, func(t *testing.T) {
				_, p := newPolicy(t, "round-robin+retry(on="+on+")", 3, newFakeClock(), nil)
				want := slices.Contains(tc.want, on)
				if _, ok := p.Retry(tc.o, 0, Request{}); ok != want {
					t.Errorf("on=%s: Retry(%+v) = %v, want %v", on, tc.o, ok, want)
				}
			})
		}
		// Every condition together retries what any of them does.
		t.Run(tc.name+"/on=all", func(t *testing.T) {
			_, p := newPolicy(t, "round-robin+retry(on=5xx|gateway-error|reset|connect|timeout)", 3, newFakeClock(), nil)
			if _, ok := p.Retry(tc.o, 0, Request{}); ok != (len(tc.want) > 0) {
				t.Errorf("on=all: Retry(%+v) = %v, want %v", tc.o, ok, len(tc.want) > 0)
			}
		})
	}
}

// TestRetryBackoffCaps checks the cap of each retry's wait, Envoy's 25, 50,
// 100, 200, then 250 ms for base 25 ms and max 250 ms: the wait is below the
// cap whatever the draw, and reaches almost all of it.
func TestRetryBackoffCaps(t *testing.T) {
	for _, tc := range []struct {
		spec string
		caps []time.Duration // for retries 1, 2, ...
	}{
		{"p2c+retry(backoff=25ms,max_backoff=250ms)", []time.Duration{25, 50, 100, 200, 250, 250, 250}},
		{"p2c+retry", []time.Duration{25, 50, 100, 200, 250, 250}},
		{"p2c+retry(backoff=10ms)", []time.Duration{10, 20, 40, 80, 100, 100}},
		{"p2c+retry(backoff=10ms,max_backoff=30ms)", []time.Duration{10, 20, 30, 30}},
		{"p2c+retry(backoff=10ms,max_backoff=10ms)", []time.Duration{10, 10, 10}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			cfg := retryConfigOf(t, tc.spec)
			almost1 := math.Nextafter(1, 0)
			for i, c := range tc.caps {
				k, c := i+1, c*time.Millisecond
				if got := cfg.backoff(k, 0); got != 0 {
					t.Errorf("retry %d, draw 0: wait %v, want 0", k, got)
				}
				if got := cfg.backoff(k, 0.5); got != c/2 {
					t.Errorf("retry %d, draw 0.5: wait %v, want %v", k, got, c/2)
				}
				if got := cfg.backoff(k, almost1); got >= c || got < c-time.Microsecond {
					t.Errorf("retry %d, draw just below 1: wait %v, want just below %v", k, got, c)
				}
			}
			// Far retries neither overflow nor pass the cap.
			if got, want := cfg.backoff(1000, almost1), tc.caps[len(tc.caps)-1]*time.Millisecond; got >= want || got < want-time.Microsecond {
				t.Errorf("retry 1000: wait %v, want just below %v", got, want)
			}
		})
	}
}

// TestRetryBackoffFullJitter draws the waits of retries 1 to 6 through
// Policy.Retry: each fills [0, cap) uniformly (full jitter), unlike gRPC's
// cap × U(0.8, 1.2), whose waits would all lie within 20% of the cap.
func TestRetryBackoffFullJitter(t *testing.T) {
	_, p := newPolicy(t, "round-robin+retry(attempts=7,backoff=25ms,max_backoff=250ms)", 3, newFakeClock(), nil)
	caps := []time.Duration{25, 50, 100, 200, 250, 250}
	const draws = 4000
	for i, c := range caps {
		k, c := i+1, c*time.Millisecond
		var lo, hi time.Duration = c, 0
		var sum float64
		below := [4]int{} // per quarter of the cap
		for range draws {
			wait, ok := p.Retry(fail503, k-1, Request{})
			if !ok {
				t.Fatalf("retry %d refused", k)
			}
			p.RetryEnded()
			if wait < 0 || wait >= c {
				t.Fatalf("retry %d: wait %v outside [0, %v)", k, wait, c)
			}
			lo, hi = min(lo, wait), max(hi, wait)
			sum += float64(wait) / float64(c)
			below[int(4*float64(wait)/float64(c))]++
		}
		if lo > c/50 || hi < c-c/50 {
			t.Errorf("retry %d: waits span [%v, %v], want about [0, %v)", k, lo, hi, c)
		}
		if mean := sum / draws; math.Abs(mean-0.5) > 0.03 {
			t.Errorf("retry %d: mean wait %.3f of the cap, want 0.5", k, mean)
		}
		for q, n := range below {
			if n < draws/4-draws/20 || n > draws/4+draws/20 {
				t.Errorf("retry %d: %d of %d waits in quarter %d of the cap, want about %d", k, n, draws, q, draws/4)
			}
		}
	}
	if got := p.Stats().Retries; got != int64(len(caps)*draws) {
		t.Errorf("Stats().Retries = %d, want %d", got, len(caps)*draws)
	}
}

func TestRetryAttemptsLimit(t *testing.T) {
	for _, attempts := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint("attempts=", attempts), func(t *testing.T) {
			_, p := newPolicy(t, fmt.Sprintf("round-robin+retry(attempts=%d)", attempts), 3, newFakeClock(), nil)
			if got, want := p.Retries(), attempts > 1; got != want {
				t.Errorf("Retries() = %v, want %v", got, want)
			}
			for retries := range attempts + 2 {
				_, ok := p.Retry(fail503, retries, Request{})
				if want := retries < attempts-1; ok != want {
					t.Errorf("Retry after %d retries = %v, want %v", retries, ok, want)
				}
				if ok {
					p.RetryEnded()
				}
			}
			if got := p.Stats().Retries; got != int64(attempts-1) {
				t.Errorf("Stats().Retries = %d, want %d", got, attempts-1)
			}
		})
	}
}

func TestRetryIdempotentOnly(t *testing.T) {
	for _, tc := range []struct {
		spec          string
		nonIdempotent bool
		want          bool
	}{
		{"round-robin+retry", false, true},
		{"round-robin+retry", true, false},
		{"round-robin+retry(idempotent_only=true)", true, false},
		{"round-robin+retry(idempotent_only=false)", true, true},
		{"round-robin+retry(idempotent_only=false)", false, true},
	} {
		t.Run(fmt.Sprintf("%s/non-idempotent=%v", tc.spec, tc.nonIdempotent), func(t *testing.T) {
			_, p := newPolicy(t, tc.spec, 3, newFakeClock(), nil)
			for _, o := range []Outcome{fail503, {Err: ErrConnect}, {Timeout: true}} {
				if _, ok := p.Retry(o, 0, Request{NonIdempotent: tc.nonIdempotent}); ok != tc.want {
					t.Errorf("Retry(%+v) = %v, want %v", o, ok, tc.want)
				} else if ok {
					p.RetryEnded()
				}
			}
		})
	}
}

// TestRetryNeverAfterSuccessOrCancel: an outcome that is no failure (an
// answer below 500, a cancelled attempt) is never retried, whatever the
// conditions, and counts as no refusal.
func TestRetryNeverAfterSuccessOrCancel(t *testing.T) {
	_, p := newPolicy(t, "round-robin+retry(attempts=100,on=5xx|gateway-error|reset|connect|timeout,idempotent_only=false,budget=100%)",
		3, newFakeClock(), nil)
	for _, o := range []Outcome{
		{Status: 200}, {Status: 204}, {Status: 301}, {Status: 404}, {Status: 499}, {},
		{Status: 200, Latency: time.Hour},
		{Status: 503, Cancelled: true},
		{Err: context.Canceled, Cancelled: true},
		{Err: ErrConnect, Cancelled: true},
		{Timeout: true, Cancelled: true},
	} {
		for retries := range 3 {
			if wait, ok := p.Retry(o, retries, Request{}); ok || wait != 0 {
				t.Errorf("Retry(%+v, %d) = %v, %v; want 0, false", o, retries, wait, ok)
			}
		}
	}
	if s := p.Stats(); s != (PolicyStats{}) {
		t.Errorf("Stats() = %+v, want zero", s)
	}
}

func TestRetryPolicyAccessors(t *testing.T) {
	_, p := newPolicy(t, "round-robin+retry(per_try_timeout=150ms,other_host=true)", 3, newFakeClock(), nil)
	if got := p.PerTryTimeout(); got != 150*time.Millisecond {
		t.Errorf("PerTryTimeout() = %v, want 150ms", got)
	}
	if !p.OtherHost() || !p.Retries() || p.Hedges() || p.MaxHedged() != 1 {
		t.Errorf("OtherHost, Retries, Hedges, MaxHedged = %v, %v, %v, %d; want true, true, false, 1",
			p.OtherHost(), p.Retries(), p.Hedges(), p.MaxHedged())
	}
	if d, ok := p.HedgeDelay(); ok || d != 0 {
		t.Errorf("HedgeDelay() = %v, %v without a hedge; want 0, false", d, ok)
	}
	_, p = newPolicy(t, "round-robin+retry", 3, newFakeClock(), nil)
	if p.PerTryTimeout() != 0 || p.OtherHost() {
		t.Errorf("defaults: PerTryTimeout() = %v, OtherHost() = %v; want 0, false", p.PerTryTimeout(), p.OtherHost())
	}
}

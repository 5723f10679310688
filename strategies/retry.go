package strategies

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Retry conditions, the values of the retry wrapper's "on" parameter; they
// name Envoy's retry_on conditions.
const (
	// Retry5xx: a 5xx answer or no answer at all (a reset, a refused or
	// failed connection, a per-try timeout), as Envoy's "5xx".
	Retry5xx = "5xx"
	// RetryGatewayError: a 502, 503 or 504 answer, or no answer (Envoy's
	// code retries resets under it too).
	RetryGatewayError = "gateway-error"
	// RetryReset: no answer after the connection was made: a reset or a
	// per-try timeout (Envoy counts the latter as a reset).
	RetryReset = "reset"
	// RetryConnect: the connection could not be made (refused, or its
	// dial timed out), as Envoy's "connect-failure".
	RetryConnect = "connect"
	// RetryTimeout: the per-try timeout expired (lbchaos's own name for the
	// part of Envoy's "reset" that a per_try_timeout causes).
	RetryTimeout = "timeout"
)

// retryConditions are the conditions "on" takes, in the order errors list
// them.
var retryConditions = []string{Retry5xx, RetryGatewayError, RetryReset, RetryConnect, RetryTimeout}

// HTTPConditions are the retry conditions that read an HTTP status: a
// strategy at L4 (raw TCP, no HTTP answer to read) cannot use them.
var HTTPConditions = []string{Retry5xx, RetryGatewayError}

// Defaults of the retry wrapper.
const (
	DefaultRetryAttempts   = 3
	DefaultRetryBackoff    = 25 * time.Millisecond
	DefaultBudgetWindow    = 10 * time.Second
	DefaultBudgetMinPerS   = 10
	DefaultMinConcurrency  = 3
	maxRetryAttempts       = 100
	budgetExhaustedDetail  = "exhausted"
	budgetAvailableDetail  = "available"
	retryBudgetName        = "budget"
	retryConcurrencyBudget = "concurrency_budget"
)

// EventBudget is a change of a retry budget's state: Detail is "exhausted"
// when it first refuses a retry and "available" when it next allows one.
// Endpoint is NoHost: a budget belongs to the strategy, not to a host.
const EventBudget = "budget"

var retryParams = []string{"attempts", "on", "per_try_timeout", "backoff", "max_backoff", "other_host",
	"idempotent_only", retryBudgetName, "min_per_s", "budget_window", retryConcurrencyBudget, "min_concurrency"}

func init() {
	registerWrapper("retry", retryParams, func(params map[string]string) (func(Picker, *buildEnv) Picker, error) {
		cfg, err := parseRetryConfig(params)
		if err != nil {
			return nil, err
		}
		return func(inner Picker, env *buildEnv) Picker {
			return newRetryLayer(inner, cfg, env)
		}, nil
	})
}

// RetryConfig is the retry wrapper's configuration: Envoy's retry policy.
//
//   - attempts (default 3): attempts a request may make in all, the first
//     included (Envoy's num_retries + 1); 1 retries nothing.
//   - on (default 5xx): the conditions retried, joined by "|": 5xx,
//     gateway-error, reset, connect, timeout (see the Retry* constants).
//   - per_try_timeout (default none): an attempt not answered within it
//     ends as a timeout of its instance, and is retried under timeout,
//     reset or 5xx; the experiment's timeout stays the whole request's
//     deadline, across attempts and backoffs, as Envoy's route timeout.
//   - backoff (default 25ms), max_backoff (default 10 × backoff): retry k
//     waits a time drawn uniformly from [0, min(backoff × 2^(k-1),
//     max_backoff)): Envoy's exponential backoff with full jitter, as its
//     code computes it (25, 50, 100, 200, then 250 ms caps). Not gRPC's
//     backoff, which scales the cap by U(0.8, 1.2).
//   - other_host (default false): a retry never goes to a host this
//     request already tried while another host is allowed (Envoy's
//     previous_hosts predicate). lbchaos removes the tried hosts from the
//     hosts the strategy picks from, where Envoy lets the balancer pick and
//     re-picks a rejected host at most host_selection_retry_max_attempts
//     times before keeping it: the same aim, with no chance of a repeat.
//     Without it a retry is a fresh pick that may land on the host that
//     just failed, as grpc-go's retries always are.
//   - idempotent_only (default true): only requests of idempotent methods
//     are retried (not POST or PATCH), as gRPC retries only what its
//     policy names and Envoy documents for non-idempotent requests.
//   - budget (a percentage, e.g. 20%), min_per_s (default 10),
//     budget_window (default 10s): Finagle's RetryBudget. Every request
//     deposits a token, every retry withdraws 1/budget of one; a retry is
//     refused when the balance over the sliding window (ten slices), plus
//     a reserve of min_per_s × window retries, would go below zero. So in
//     any window retries stay under budget × requests + min_per_s × window.
//     Departure: Finagle's windows slide on its own timer; here they
//     slide on the strategy's clock, at each request.
//   - concurrency_budget (a percentage), min_concurrency (default 3):
//     Envoy's retry_budget: a retry is refused while the retries in flight
//     (from the decision to retry until that attempt ends, its backoff
//     included) reach max(budget × attempts in flight, min_concurrency).
//     Departure: Envoy counts a cluster's active and pending requests over
//     every client of it; here those of this strategy replica.
//
// A refused retry returns the failure the request already had. Without a
// budget nothing limits retries: the amplification a design review fears.
type RetryConfig struct {
	Attempts       int
	On             []string
	PerTryTimeout  time.Duration // 0: none
	Backoff        time.Duration
	MaxBackoff     time.Duration
	OtherHost      bool
	IdempotentOnly bool
	// Budget is the Finagle budget's share (0: none), MinPerS its reserve
	// rate and BudgetWindow its window.
	Budget       float64
	MinPerS      int
	BudgetWindow time.Duration
	// ConcurrencyBudget is Envoy's retry_budget share (0: none) and
	// MinConcurrency its floor.
	ConcurrencyBudget float64
	MinConcurrency    int
}

func parseRetryConfig(params map[string]string) (RetryConfig, error) {
	cfg := RetryConfig{}
	var err error
	if cfg.Attempts, err = intParam(params, "attempts", DefaultRetryAttempts, 1); err != nil {
		return cfg, err
	}
	if cfg.Attempts > maxRetryAttempts {
		return cfg, fmt.Errorf("attempts: want at most %d, got %d", maxRetryAttempts, cfg.Attempts)
	}
	on := params["on"]
	if on == "" {
		on = Retry5xx
	}
	for _, c := range strings.Split(on, "|") {
		if !slices.Contains(retryConditions, c) {
			return cfg, fmt.Errorf("on: unknown condition %q (known: %s, joined by |)", c, strings.Join(retryConditions, ", "))
		}
		if !slices.Contains(cfg.On, c) {
			cfg.On = append(cfg.On, c)
		}
	}
	if cfg.PerTryTimeout, err = durationParam(params, "per_try_timeout", 0); err != nil {
		return cfg, err
	}
	if cfg.Backoff, err = durationParam(params, "backoff", DefaultRetryBackoff); err != nil {
		return cfg, err
	}
	if cfg.MaxBackoff, err = durationParam(params, "max_backoff", 10*cfg.Backoff); err != nil {
		return cfg, err
	}
	if cfg.MaxBackoff < cfg.Backoff {
		return cfg, fmt.Errorf("max_backoff: %v is shorter than backoff (%v)", cfg.MaxBackoff, cfg.Backoff)
	}
	if cfg.OtherHost, err = boolParam(params, "other_host", false); err != nil {
		return cfg, err
	}
	if cfg.IdempotentOnly, err = boolParam(params, "idempotent_only", true); err != nil {
		return cfg, err
	}
	if cfg.Budget, err = percentParam(params, retryBudgetName); err != nil {
		return cfg, err
	}
	if cfg.MinPerS, err = intParam(params, "min_per_s", DefaultBudgetMinPerS, 0); err != nil {
		return cfg, err
	}
	if cfg.BudgetWindow, err = durationParam(params, "budget_window", DefaultBudgetWindow); err != nil {
		return cfg, err
	}
	if cfg.BudgetWindow < time.Second || cfg.BudgetWindow > time.Minute {
		return cfg, fmt.Errorf("budget_window: want 1s to 60s, as Finagle's ttl, got %v", cfg.BudgetWindow)
	}
	if cfg.ConcurrencyBudget, err = percentParam(params, retryConcurrencyBudget); err != nil {
		return cfg, err
	}
	if cfg.MinConcurrency, err = intParam(params, "min_concurrency", DefaultMinConcurrency, 0); err != nil {
		return cfg, err
	}
	for _, k := range []string{"min_per_s", "budget_window"} {
		if _, ok := params[k]; ok && cfg.Budget == 0 {
			return cfg, fmt.Errorf("%s: sets the budget's reserve, but no budget is given; add budget=20%% (a share of requests)", k)
		}
	}
	if _, ok := params["min_concurrency"]; ok && cfg.ConcurrencyBudget == 0 {
		return cfg, errors.New("min_concurrency: sets the concurrency budget's floor, but no concurrency_budget is given; add concurrency_budget=20%")
	}
	return cfg, nil
}

// percentParam reads a share written "20%" (or as a fraction, "0.2") in
// (0, 100%]; 0 when key is absent.
func percentParam(params map[string]string, key string) (float64, error) {
	v, ok := params[key]
	if !ok {
		return 0, nil
	}
	var f float64
	var err error
	if p, isPct := strings.CutSuffix(v, "%"); isPct {
		f, err = strconv.ParseFloat(p, 64)
		f /= 100
	} else {
		f, err = strconv.ParseFloat(v, 64)
	}
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("%s: want a share in (0, 100%%], like 20%%, got %q", key, v)
	}
	return f, nil
}

// retries reports whether the conditions retry outcome o (an attempt that
// failed).
func (c *RetryConfig) retries(o Outcome) bool {
	noAnswer := o.Status == 0
	// A dial that failed, refused or timed out (a timed-out one may carry
	// Timeout too): no connection was made, Envoy's connect failure.
	connect := noAnswer && IsConnectError(o.Err)
	for _, cond := range c.On {
		switch cond {
		case Retry5xx:
			if o.Status >= 500 || noAnswer {
				return true
			}
		case RetryGatewayError:
			if o.Status == 502 || o.Status == 503 || o.Status == 504 || noAnswer {
				return true
			}
		case RetryReset:
			// A per-try timeout counts as a reset, even one that cut a dial.
			if noAnswer && (o.Timeout || !connect) {
				return true
			}
		case RetryConnect:
			if connect {
				return true
			}
		case RetryTimeout:
			if o.Timeout {
				return true
			}
		}
	}
	return false
}

// backoff draws the wait before retry k (1 for the first retry) from
// u, a uniform draw in [0, 1).
func (c *RetryConfig) backoff(k int, u float64) time.Duration {
	limit := c.Backoff
	for i := 1; i < k && limit < c.MaxBackoff; i++ {
		limit *= 2
	}
	limit = min(limit, c.MaxBackoff)
	return time.Duration(u * float64(limit))
}

// ErrConnect is the error a simulated connection failure carries; a
// transport error that wraps it, or a dial error, is a connect failure
// (IsConnectError).
var ErrConnect = errors.New("connection refused")

// IsConnectError reports whether err is a failure to connect: a refused
// connection or a failed dial, as opposed to a connection reset or closed
// after it was made.
func IsConnectError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrConnect) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

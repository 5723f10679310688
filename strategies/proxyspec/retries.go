package proxyspec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The proxies' own retries, as parameters of their algorithms.
//
// nginx (ngx_http_proxy_module): next_upstream (proxy_next_upstream,
// default "error timeout") says which failures pass a request on to the
// next server; a request with a non-idempotent method (POST, LOCK, PATCH)
// already sent to a server is passed on only with non_idempotent among
// them, and nothing is passed on once a byte of the answer went to the
// client. tries (proxy_next_upstream_tries) bounds the attempts, the
// first included (without it each server is tried at most once);
// next_upstream_timeout (proxy_next_upstream_timeout)
// bounds the time spent passing a request on; 0 (the default of both)
// leaves it unbounded.
//
//	nginx:round_robin(next_upstream=error|timeout|non_idempotent,tries=2,next_upstream_timeout=2s)
//
// HAProxy: retries (default 3) is how many times a request or connection
// is tried again after a failure; retry_on (HAProxy's retry-on, default
// conn-failure, written joined by "|") the failures retried beyond a
// connection that could not be made. HAProxy checks no method: with
// anything but none and conn-failure it replays any request that fits its
// buffer, a POST too. A retry goes to the same server, after a turn-around
// of min(timeout connect, 1 s), unless redispatch (option redispatch) sends
// it elsewhere: true redispatches the last retry (HAProxy's default
// interval, -1), an integer N every Nth retry (N > 0) or the Nth before the
// last (N < 0), false or 0 none.
//
//	haproxy:roundrobin(retries=2,retry_on=503|empty-response,redispatch=true)
//
// Caddy 2.6 (reverse_proxy's load_balancing): lb_retries (retries) is how
// many times a request is tried again on the next upstream the policy
// selects, lb_try_duration (try_duration) how long it keeps trying,
// lb_try_interval (try_interval; 250ms with lb_try_duration, else 0) the
// wait between tries. Caddy retries only a round trip that failed (no
// connection, a reset, no answer within a timeout), never an answer,
// whatever its status; and after the connection was made, only a GET (its
// retry_match is not offered here).
//
//	caddy:round_robin(lb_retries=2,lb_try_interval=10ms)
var (
	nginxRetry   = []string{"tries", "next_upstream_timeout"}
	haproxyRetry = []string{"retries", "retry_on", "redispatch"}
	caddyRetry   = []string{"lb_retries", "lb_try_duration", "lb_try_interval"}
)

// HAProxyRetryOn are the keywords of HAProxy 2.6's retry-on that a proxy
// spec's retry_on may list.
var HAProxyRetryOn = []string{"none", "conn-failure", "empty-response", "junk-response", "response-timeout", "0rtt-rejected",
	"401", "403", "404", "408", "425", "500", "501", "502", "503", "504", "all-retryable-errors"}

// validateRetryParam checks one of the proxies' retry parameters.
func validateRetryParam(k, v string) error {
	switch k {
	case "tries", "retries", "lb_retries":
		_, err := IntParam(map[string]string{k: v}, k, 0, 0)
		return err
	case "next_upstream_timeout":
		// nginx reads whole milliseconds; 0 is its default (none).
		if d, err := time.ParseDuration(v); err != nil || d < 0 || d%time.Millisecond != 0 {
			return fmt.Errorf("%s: want a whole number of milliseconds >= 0 like \"2s\" (0 = none), got %q", k, v)
		}
	case "lb_try_interval":
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Errorf("%s: want a duration >= 0 like \"10ms\", got %q", k, v)
		}
	case "lb_try_duration":
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("%s: want a duration > 0 like \"5s\", got %q", k, v)
		}
	case "retry_on":
		conds := strings.Split(v, "|")
		for _, c := range conds {
			if !slices.Contains(HAProxyRetryOn, c) {
				return fmt.Errorf("retry_on: %q is not a retry-on keyword of HAProxy 2.6 (want some of %s, joined by \"|\")", c, strings.Join(HAProxyRetryOn, ", "))
			}
		}
		if slices.Contains(conds, "none") && len(conds) > 1 {
			return fmt.Errorf("retry_on: \"none\" cannot be combined with other conditions, got %q", v)
		}
	case "redispatch":
		if _, ok := HAProxyRedispatch(v); !ok {
			return fmt.Errorf("redispatch: want true, false or an integer interval (1 = every retry, -1 = the last), got %q", v)
		}
	}
	return nil
}

// HAProxyRedispatch reads redispatch: the interval of "option redispatch"
// (true is HAProxy's default, -1: the last retry) and whether it is valid;
// 0 is no redispatch.
func HAProxyRedispatch(v string) (int, bool) {
	switch v {
	case "true":
		return -1, true
	case "false":
		return 0, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// checkRetries checks what depends on more than one retry parameter, and
// what a connection-level proxy cannot do.
func checkRetries(ps Spec) error {
	name := ps.Kind + ":" + ps.Algorithm
	_, interval := ps.Params["lb_try_interval"]
	_, retries := ps.Params["lb_retries"]
	_, duration := ps.Params["lb_try_duration"]
	if interval && !retries && !duration {
		return fmt.Errorf("%s: lb_try_interval needs lb_retries or lb_try_duration: without either caddy tries a request once", name)
	}
	if _, ok := ps.Params["retry_on"]; ok && ps.ConnLevel() {
		return fmt.Errorf("%s+%s: retry_on: HAProxy ignores retry-on in mode tcp, which sees no requests; there retries (connection attempts) and redispatch apply", name, ModeTCP)
	}
	return nil
}

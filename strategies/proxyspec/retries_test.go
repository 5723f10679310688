package proxyspec_test

import (
	"testing"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestParseRetries: the proxies' own retry settings, and what each
// rejects, naming the parameter.
func TestParseRetries(t *testing.T) {
	tests := []struct {
		spec string
		want proxyspec.Spec
		err  string
	}{
		{spec: "nginx:round_robin(next_upstream=error|timeout|non_idempotent,tries=2,next_upstream_timeout=1500ms)", want: proxyspec.Spec{Kind: "nginx", Algorithm: "round_robin",
			Params: map[string]string{"next_upstream": "error|timeout|non_idempotent", "tries": "2", "next_upstream_timeout": "1500ms"}}},
		{spec: "nginx:hash(tries=0,next_upstream_timeout=0s)", want: proxyspec.Spec{Kind: "nginx", Algorithm: "hash", Params: map[string]string{"tries": "0", "next_upstream_timeout": "0s"}}},
		{spec: "nginx:least_conn(tries=-1)", err: `nginx:least_conn: tries: want an integer >= 0, got "-1"`},
		{spec: "nginx:least_conn(next_upstream_timeout=1.5ms)", err: `nginx:least_conn: next_upstream_timeout: want a whole number of milliseconds >= 0`},
		{spec: "nginx:file(path=u.conf,tries=2)", err: `nginx: file: unknown parameter "tries" (allowed: path)`},
		{spec: "haproxy:roundrobin(retries=2,retry_on=503|conn-failure,redispatch=true)", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "roundrobin",
			Params: map[string]string{"retries": "2", "retry_on": "503|conn-failure", "redispatch": "true"}}},
		{spec: "haproxy:random(2)(retry_on=all-retryable-errors,redispatch=1)", err: `malformed spec`},
		{spec: "haproxy:random(draws=2,retry_on=all-retryable-errors,redispatch=1)", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "random",
			Params: map[string]string{"draws": "2", "retry_on": "all-retryable-errors", "redispatch": "1"}}},
		{spec: "haproxy:leastconn(retries=0,redispatch=false)", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "leastconn", Params: map[string]string{"retries": "0", "redispatch": "false"}}},
		{spec: "haproxy:leastconn(retries=x)", err: `haproxy:leastconn: retries: want an integer >= 0, got "x"`},
		{spec: "haproxy:leastconn(retry_on=503|599)", err: `haproxy:leastconn: retry_on: "599" is not a retry-on keyword of HAProxy 2.6`},
		{spec: "haproxy:leastconn(retry_on=none|503)", err: `haproxy:leastconn: retry_on: "none" cannot be combined`},
		{spec: "haproxy:leastconn(redispatch=yes)", err: `haproxy:leastconn: redispatch: want true, false or an integer interval`},
		{spec: "haproxy:leastconn(retry_on=503)+tcp", err: `haproxy:leastconn+tcp: retry_on: HAProxy ignores retry-on in mode tcp`},
		{spec: "haproxy:leastconn(retries=2,redispatch=true)+tcp", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "leastconn",
			Params: map[string]string{"retries": "2", "redispatch": "true"}, Options: []proxyspec.Segment{{Name: "tcp"}}}},
		{spec: "caddy:round_robin(lb_retries=2,lb_try_interval=10ms)", want: proxyspec.Spec{Kind: "caddy", Algorithm: "round_robin",
			Params: map[string]string{"lb_retries": "2", "lb_try_interval": "10ms"}}},
		{spec: "caddy:random_choose(2,lb_try_duration=5s)", want: proxyspec.Spec{Kind: "caddy", Algorithm: "random_choose",
			Params: map[string]string{"choose": "2", "lb_try_duration": "5s"}}},
		{spec: "caddy:least_conn(lb_try_interval=10ms)", err: `caddy:least_conn: lb_try_interval needs lb_retries or lb_try_duration`},
		{spec: "caddy:least_conn(lb_try_duration=0s)", err: `caddy:least_conn: lb_try_duration: want a duration > 0`},
		{spec: "caddy:least_conn(lb_retries=many)", err: `caddy:least_conn: lb_retries: want an integer >= 0, got "many"`},
		{spec: "caddy:first(retries=2)", err: `caddy: first: unknown parameter "retries"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) { checkParse(t, tt.spec, tt.want, tt.err) })
	}
	for v, want := range map[string]int{"true": -1, "false": 0, "1": 1, "-2": -2} {
		if got, ok := proxyspec.HAProxyRedispatch(v); !ok || got != want {
			t.Errorf("HAProxyRedispatch(%q) = %d, %v; want %d", v, got, ok, want)
		}
	}
}

package proxyspec_test

import (
	"testing"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestParseL4AndCaddy: the connection-level modifiers and caddy's
// policies and passive health parameters, and what each rejects.
func TestParseL4AndCaddy(t *testing.T) {
	tests := []struct {
		spec string
		want proxyspec.Spec
		l4   bool
		err  string
	}{
		{spec: "haproxy:roundrobin+tcp", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "roundrobin", Options: []proxyspec.Segment{{Name: "tcp"}}}, l4: true},
		{spec: "haproxy:leastconn+tcp+check(inter=1s)", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "leastconn",
			Options: []proxyspec.Segment{{Name: "tcp"}, {Name: "check", Params: map[string]string{"inter": "1s"}}}}, l4: true},
		{spec: "nginx:least_conn+stream", want: proxyspec.Spec{Kind: "nginx", Algorithm: "least_conn", Options: []proxyspec.Segment{{Name: "stream"}}}, l4: true},
		{spec: "nginx:round_robin(max_fails=2,next_upstream=error|timeout)+stream", want: proxyspec.Spec{Kind: "nginx", Algorithm: "round_robin",
			Params: map[string]string{"max_fails": "2", "next_upstream": "error|timeout"}, Options: []proxyspec.Segment{{Name: "stream"}}}, l4: true},
		{spec: "haproxy:leastconn", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "leastconn"}},
		{spec: "nginx:least_conn(next_upstream=error|http_503)+stream",
			err: `nginx:least_conn+stream: next_upstream: "http_503" is an HTTP condition, and nginx's stream module sees no HTTP requests or responses`},
		{spec: "nginx:round_robin(next_upstream=off|error)+stream", err: `next_upstream: "off" cannot be combined`},
		{spec: "nginx:hash+stream", err: `nginx:hash+stream: hash hashes the request header X-Lbchaos-Key, which nginx's stream module never reads`},
		{spec: "haproxy:leastconn+observe+tcp", err: `haproxy:leastconn+tcp: +observe is HAProxy's observe layer7, which judges servers by their HTTP responses; mode tcp does not see them`},
		{spec: "haproxy:leastconn+stream", err: `haproxy: unknown option "stream" (known: check, observe, tcp)`},
		{spec: "nginx:least_conn+tcp", err: `nginx: unknown option "tcp" (nginx takes its options as parameters of the algorithm); its one modifier is +stream`},
		{spec: "nginx:file(path=u.conf)+stream", err: `nginx:file: +stream: a file spec's section is an HTTP-level one`},
		{spec: "caddy:least_conn", want: proxyspec.Spec{Kind: "caddy", Algorithm: "least_conn"}},
		{spec: "caddy:random_choose(2)", want: proxyspec.Spec{Kind: "caddy", Algorithm: "random_choose", Params: map[string]string{"choose": "2"}}},
		{spec: "caddy:random_choose(3,fail_duration=5s)", want: proxyspec.Spec{Kind: "caddy", Algorithm: "random_choose", Params: map[string]string{"choose": "3", "fail_duration": "5s"}}},
		{spec: "caddy:random_choose(3)(fail_duration=5s)", want: proxyspec.Spec{Kind: "caddy", Algorithm: "random_choose", Params: map[string]string{"choose": "3", "fail_duration": "5s"}}},
		{spec: "caddy:round_robin(fail_duration=30s,max_fails=2,unhealthy_latency=250ms,unhealthy_status=5xx|429,unhealthy_request_count=100)",
			want: proxyspec.Spec{Kind: "caddy", Algorithm: "round_robin", Params: map[string]string{"fail_duration": "30s", "max_fails": "2",
				"unhealthy_latency": "250ms", "unhealthy_status": "5xx|429", "unhealthy_request_count": "100"}}},
		{spec: "caddy:least_conn(fail_duration=1s,unhealthy_request_count=10)", want: proxyspec.Spec{Kind: "caddy", Algorithm: "least_conn", Params: map[string]string{"fail_duration": "1s", "unhealthy_request_count": "10"}}},
		{spec: "caddy:least_conn(unhealthy_request_count=10)", err: `caddy:least_conn: unhealthy_request_count needs fail_duration`},
		{spec: "caddy:ip_hash", err: `caddy: unknown algorithm "ip_hash" (known: first, header, least_conn, random, random_choose, round_robin)`},
		{spec: "caddy:least_conn(unhealthy_latency=250ms)", err: `caddy:least_conn: unhealthy_latency needs fail_duration`},
		{spec: "caddy:least_conn(fail_duration=10s,max_fails=0)", err: `caddy:least_conn: max_fails: want an integer >= 1`},
		{spec: "caddy:least_conn(fail_duration=0s)", err: `caddy:least_conn: fail_duration: want a duration > 0 like "250ms", got "0s"`},
		{spec: "caddy:least_conn(fail_duration=1s,unhealthy_status=5xx|600)", err: `unhealthy_status: "600" is not a status`},
		{spec: "caddy:random_choose(0)", err: `caddy:random_choose: choose: want an integer >= 1, got "0"`},
		{spec: "caddy:least_conn(next_upstream=error)", err: `caddy: least_conn: unknown parameter "next_upstream" (allowed: fail_duration, max_fails, unhealthy_status, unhealthy_latency, unhealthy_request_count, lb_retries, lb_try_duration, lb_try_interval)`},
		{spec: "caddy:least_conn+tcp", err: `caddy: unknown option "tcp" (caddy takes its options as parameters of the algorithm)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got := checkParse(t, tt.spec, tt.want, tt.err)
			if tt.err == "" && got.ConnLevel() != tt.l4 {
				t.Errorf("ConnLevel() = %v, want %v", got.ConnLevel(), tt.l4)
			}
		})
	}
}

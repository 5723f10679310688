package proxyspec_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"

	// Registers the parser of lbchaos:STRATEGY specs.
	_ "github.com/lbchaos/lbchaos/strategies"
)

// TestParse: each proxy's algorithms, parameters and options, file specs,
// lbchaos specs (parsed by package strategies), and what each rejects.
func TestParse(t *testing.T) {
	tests := []struct {
		spec string
		want proxyspec.Spec
		err  string
	}{
		{spec: "nginx:round_robin", want: proxyspec.Spec{Kind: "nginx", Algorithm: "round_robin"}},
		{spec: "nginx:least_conn(max_fails=3,fail_timeout=5s,next_upstream=error|timeout|http_503)", want: proxyspec.Spec{Kind: "nginx", Algorithm: "least_conn",
			Params: map[string]string{"max_fails": "3", "fail_timeout": "5s", "next_upstream": "error|timeout|http_503"}}},
		{spec: "nginx:max_fails=0", err: `nginx: malformed spec`},
		{spec: "haproxy:random(2)+observe(error_limit=5,on_error=mark-down)", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "random",
			Params: map[string]string{"draws": "2"}, Options: []proxyspec.Segment{{Name: "observe", Params: map[string]string{"error_limit": "5", "on_error": "mark-down"}}}}},
		{spec: "haproxy:leastconn+check", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "leastconn", Options: []proxyspec.Segment{{Name: "check"}}}},
		{spec: "lbchaos: p2c + eject(consecutive=5)", want: proxyspec.Spec{Kind: "lbchaos", Algorithm: "p2c+eject(consecutive=5)"}},
		{spec: "nginx:least_connections", err: `nginx: unknown algorithm "least_connections" (known: file, hash, least_conn, random_two, round_robin)`},
		{spec: "haproxy:leastconn+observe(on_error=panic)", err: `haproxy+observe: on_error: want one of fastinter, fail-check, sudden-death, mark-down, got "panic"`},
		{spec: "haproxy:leastconn+slowstart", err: `haproxy: unknown option "slowstart" (known: check, observe, tcp)`},
		{spec: "nginx:least_conn+observe", err: `nginx: unknown option "observe" (nginx takes its options as parameters of the algorithm)`},
		{spec: "nginx:least_conn(next_upstream=error|http_599)", err: `nginx:least_conn: next_upstream: "http_599" is not a proxy_next_upstream condition`},
		{spec: "nginx:least_conn(fail_timeout=1500ms)", err: `nginx:least_conn: fail_timeout: want a whole number of seconds > 0`},
		{spec: "haproxy:leastconn+check(inter=1.5ms)", err: `haproxy+check: inter: want a whole number of milliseconds > 0`},
		{spec: "nginx:least_conn(max_fails=-1)", err: `nginx:least_conn: max_fails: want an integer >= 0, got "-1"`},
		{spec: "haproxy:random(0)", err: `haproxy:random: draws: want an integer >= 1, got "0"`},
		{spec: "haproxy:roundrobin(draws=2)", err: `haproxy: roundrobin: unknown parameter "draws" (allowed: retries, retry_on, redispatch)`},
		{spec: "haproxy:leastconn+check+check", err: `haproxy: option "check" given twice`},
		{spec: "lbchaos:p3c", err: `lbchaos: unknown strategy "p3c"`},
		{spec: "nginx:file(path=upstream.conf)", want: proxyspec.Spec{Kind: "nginx", Algorithm: "file", Params: map[string]string{"path": "upstream.conf"}}},
		{spec: "haproxy:file( path = /etc/lb/backend.cfg )", want: proxyspec.Spec{Kind: "haproxy", Algorithm: "file", Params: map[string]string{"path": "/etc/lb/backend.cfg"}}},
		{spec: "nginx:file", err: `nginx:file: path is required: the file with your own upstream section, e.g. nginx:file(path=upstream.conf)`},
		{spec: "haproxy:file()", err: `haproxy:file: path is required: the file with your own backend section, e.g. haproxy:file(path=backend.cfg)`},
		{spec: "nginx:file(path=a,b.conf)", err: `nginx:file: path "a,b.conf" contains ",", which a strategy spec cannot carry`},
		{spec: "nginx:file(path=lb(1).conf)", err: `nginx:file: path "lb(1).conf" contains "(", which a strategy spec cannot carry`},
		{spec: "haproxy:file(path=a)b.cfg)", err: `haproxy:file: path "a)b.cfg" contains ")", which a strategy spec cannot carry`},
		{spec: "nginx:file(path=c++.conf)", err: `nginx:file: path "c++.conf" contains "+", which a strategy spec cannot carry`},
		{spec: "nginx:file(path=a=b.conf)", err: `nginx:file: path "a=b.conf" contains "=", which a strategy spec cannot carry`},
		{spec: "nginx:file(path=u.conf,max_fails=3)", err: `nginx: file: unknown parameter "max_fails" (allowed: path)`},
		{spec: "haproxy:file(path=b.cfg)+check", err: `haproxy:file: takes no options ("+check"): write them in the file`},
		{spec: "envoy:least_request", err: `malformed proxy spec "envoy:least_request"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) { checkParse(t, tt.spec, tt.want, tt.err) })
	}
	for _, s := range []string{"p2c", "least-inflight+eject", " nginx-ish"} {
		if proxyspec.IsProxy(s) {
			t.Errorf("IsProxy(%q) = true", s)
		}
	}
}

// checkParse checks one case of a Parse table: spec fails with an error
// containing wantErr or, when wantErr is "", parses to want and IsProxy
// accepts it. It returns what Parse returned.
func checkParse(t *testing.T, spec string, want proxyspec.Spec, wantErr string) proxyspec.Spec {
	t.Helper()
	got, err := proxyspec.Parse(spec)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Parse error %v, want %q", err, wantErr)
		}
		return got
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
	if !proxyspec.IsProxy(spec) {
		t.Errorf("IsProxy(%q) = false", spec)
	}
	return got
}

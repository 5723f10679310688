package proxies

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestRetryConfigs: each proxy's retry settings are written as its own
// directives, nothing when not given (the proxy's defaults), and the
// installed proxy accepts the configuration.
func TestRetryConfigs(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	for _, tt := range []struct {
		spec      string
		want, not []string
	}{
		{"nginx:round_robin(next_upstream=error|timeout|non_idempotent,tries=2,next_upstream_timeout=1500ms)",
			[]string{"proxy_next_upstream error timeout non_idempotent;\n", "            proxy_next_upstream_tries 2;\n", "            proxy_next_upstream_timeout 1500ms;\n"}, nil},
		{"nginx:least_conn", nil, []string{"proxy_next_upstream_tries", "proxy_next_upstream_timeout"}},
		{"nginx:least_conn(tries=3)+stream", []string{"proxy_next_upstream on;\n", "        proxy_next_upstream_tries 3;\n"}, []string{"proxy_next_upstream_timeout"}},
		{"haproxy:roundrobin(retries=2,retry_on=503|empty-response,redispatch=true)",
			[]string{"    retries 2\n", "    retry-on 503 empty-response\n", "    option redispatch\n"}, nil},
		{"haproxy:random(draws=2,redispatch=1)", []string{"balance random(2)", "    option redispatch 1\n"}, []string{"retries", "retry-on"}},
		{"haproxy:leastconn(redispatch=false)", []string{"    no option redispatch\n"}, nil},
		{"haproxy:leastconn", nil, []string{"retries", "retry-on", "redispatch"}},
		{"haproxy:leastconn(retries=1,redispatch=true)+tcp", []string{"mode tcp", "    retries 1\n", "    option redispatch\n"}, nil},
		{"caddy:round_robin(lb_retries=2,lb_try_interval=10ms)", []string{`"retries": 2`, `"try_interval": "10ms"`}, []string{"try_duration"}},
		{"caddy:first(lb_try_duration=2s)", []string{`"try_duration": "2s"`}, []string{`"retries"`}},
		{"caddy:first", nil, []string{`"retries"`, "try_duration", "try_interval"}},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			ps, err := proxyspec.Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			cfg := proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: 30 * time.Second, dir: t.TempDir()}
			text := configText(t, cfg)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("config lacks %q:\n%s", w, text)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("config has %q:\n%s", n, text)
				}
			}
			bin, err := proxyBinary(ps.Kind, "")
			if errors.Is(err, ErrNotInstalled) {
				t.Logf("%s not installed: its own check is skipped", ps.Kind)
				return
			}
			if ps.Kind == proxyspec.Nginx && ps.ConnLevel() {
				if _, err := nginxStreamModule(); err != nil {
					t.Logf("%v: nginx's own check is skipped", err)
					return
				}
			}
			if _, err := configure(context.Background(), bin, cfg, filepath.Join(cfg.dir, "access.log")); err != nil {
				t.Errorf("%s rejects the configuration: %v", ps.Kind, err)
			}
		})
	}
}

// configText is the configuration generated for cfg.
func configText(t *testing.T, cfg proxyConfig) string {
	t.Helper()
	ps := cfg.spec
	switch {
	case ps.Kind == proxyspec.Nginx && ps.ConnLevel():
		return nginxStreamConfig(cfg, "/d/access.log", "/m/ngx_stream_module.so")
	case ps.Kind == proxyspec.Nginx:
		return nginxConfig(cfg, "/d/access.log")
	case ps.Kind == proxyspec.HAProxy && ps.ConnLevel():
		return haproxyTCPConfig(cfg)
	case ps.Kind == proxyspec.HAProxy:
		return haproxyConfig(cfg)
	}
	b, err := caddyConfig(cfg, "/d/upstreams.log")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

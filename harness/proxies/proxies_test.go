package proxies

import (
	"context"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies/lbproxy"
	"github.com/lbchaos/lbchaos/strategies"
)

func TestGeneratedConfigs(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	cfg := func(spec string) proxyConfig {
		ps, err := strategies.ParseProxy(spec)
		if err != nil {
			t.Fatal(err)
		}
		return proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: 30 * time.Second, dir: "/d"}
	}
	for _, tt := range []struct {
		spec string
		want []string
	}{
		{"nginx:round_robin", []string{"server 127.0.0.1:9001 max_fails=1 fail_timeout=10s;", "proxy_next_upstream error timeout;", "keepalive 1024;", "proxy_read_timeout 35000ms;"}},
		{"nginx:least_conn(max_fails=3,fail_timeout=5s,next_upstream=error|http_503)", []string{"least_conn;", "server 127.0.0.1:9002 max_fails=3 fail_timeout=5s;", "proxy_next_upstream error http_503;"}},
		{"nginx:random_two", []string{"random two least_conn;"}},
		{"nginx:hash", []string{"hash $http_x_lbchaos_key consistent;"}},
		{"haproxy:roundrobin", []string{"balance roundrobin", "server i0 127.0.0.1:9001\n", "server i1 127.0.0.1:9002\n"}},
		{"haproxy:random(3)", []string{"balance random(3)"}},
		{"haproxy:leastconn+observe", []string{"server i0 127.0.0.1:9001 check inter 2s fall 3 rise 2 observe layer7 error-limit 10 on-error fail-check"}},
		{"haproxy:leastconn+check(inter=500ms,fall=2,rise=1)", []string{"server i1 127.0.0.1:9002 check inter 500ms fall 2 rise 1\n"}},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			c := cfg(tt.spec)
			var text string
			if c.spec.Kind == strategies.ProxyNginx {
				text = nginxConfig(c, "/d/access.log")
			} else {
				text = haproxyConfig(c)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("config lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestProxyStartErrors(t *testing.T) {
	runtest.Need(t, Installed(strategies.ProxyNginx, "unused"))
	runtest.Need(t, Installed(strategies.ProxyHAProxy, "unused"))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	backends := []*url.URL{u}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	for _, tt := range []struct {
		name, spec, listen, want string
	}{
		{"nginx port taken", "nginx:round_robin", taken.Addr().String(), "Address already in use"},
		{"haproxy port taken", "haproxy:roundrobin", taken.Addr().String(), "cannot bind socket"},
		{"nginx rejects its configuration", "nginx:round_robin", "127.0.0.1:99999", "nginx rejected its generated configuration"},
		{"haproxy rejects its configuration", "haproxy:roundrobin", "127.0.0.1:99999", "haproxy rejected its generated configuration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := strategies.ParseProxy(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = startProxy(context.Background(), proxyConfig{spec: ps, listen: tt.listen, backends: backends, timeout: time.Second, dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if left := runtest.ProxyLeftovers(t); len(left) > 0 {
				t.Errorf("processes left behind: %q", left)
			}
		})
	}

	t.Run("not installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		old := sbinDir
		sbinDir = t.TempDir()
		defer func() { sbinDir = old }()
		err := Check("nginx:least_conn", "")
		if err == nil || !strings.Contains(err.Error(), "nginx is not installed: run `make deps`") {
			t.Errorf("error %v, want one saying how to install nginx", err)
		}
	})
}

// TestLbchaosProxyCommandLine: lbchaos: strategies run `lbchaos proxy` with
// the experiment's seed, a timeout beyond the client's, one thread for Go
// code, and every backend in instance order, as the command parses it.
func TestLbchaosProxyCommandLine(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	ps, err := strategies.ParseProxy("lbchaos:p2c+eject")
	if err != nil {
		t.Fatal(err)
	}
	args := lbchaosArgs(proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: time.Second, seed: 42}, "/d/access.log")
	if args[0] != "proxy" {
		t.Fatalf("args %q do not start with the proxy command", args)
	}
	got := lbproxy.DefaultFlags
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	got.Bind(fs)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatal(err)
	}
	want := lbproxy.Flags{Listen: "127.0.0.1:8000", Strategy: "p2c+eject", Backends: []string{b0.String(), b1.String()},
		Timeout: OwnTimeout(time.Second), AccessLog: "/d/access.log", Seed: 42, Procs: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\nwant   %+v", got, want)
	}
}

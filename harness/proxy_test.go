package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// needProxy skips the test when kind is not installed, and fails it under
// CI=true, where .ci/run installs it.
func needProxy(t testing.TB, kind string) {
	t.Helper()
	if _, err := proxyBinary(kind, "unused"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip(err)
	}
}

var (
	lbchaosBinOnce sync.Once
	lbchaosBin     string
	lbchaosBinErr  error
)

// buildLbchaos builds the lbchaos command once per test binary, for
// "lbchaos:..." proxy strategies.
func buildLbchaos(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LBCHAOS_BIN"); p != "" {
		return p
	}
	lbchaosBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lbchaos-bin-")
		if err != nil {
			lbchaosBinErr = err
			return
		}
		lbchaosBin = filepath.Join(dir, "lbchaos")
		out, err := exec.Command("go", "build", "-o", lbchaosBin, "../cmd/lbchaos").CombinedOutput()
		if err != nil {
			lbchaosBinErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if lbchaosBinErr != nil {
		t.Fatal(lbchaosBinErr)
	}
	return lbchaosBin
}

// proxyLeftovers lists processes started from a proxy directory of ours.
func proxyLeftovers(t *testing.T) []string {
	t.Helper()
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, "lbchaos-nginx-") || strings.Contains(cmd, "lbchaos-haproxy-") || strings.Contains(cmd, "lbchaos-lbchaos-") {
			found = append(found, cmd)
		}
	}
	return found
}

func TestProxyStrategiesFastFail(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through real proxies")
	}
	needProxy(t, strategies.ProxyNginx)
	needProxy(t, strategies.ProxyHAProxy)
	exp := mustExperiment(t, "proxy-fast-fail", `
seed: 2
duration: 2s
rate: 500
timeout: 5s
instances: {count: 4, workers: 4, service: {dist: fixed, value: 5ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - nginx:least_conn
  - "nginx:least_conn(next_upstream=error|timeout|http_503)"
  - haproxy:leastconn
  - "haproxy:random(2)+observe(error_limit=5,on_error=mark-down)"
  - lbchaos:least-inflight
`)
	sum, err := Run(context.Background(), exp, Options{LbchaosBinary: buildLbchaos(t)})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]float64{}
	for _, st := range sum.Strategies {
		checkAccounting(t, st)
		if st.Requests < 800 || st.Unattributed != 0 {
			t.Errorf("%s: %d requests, %d unattributed", st.Name, st.Requests, st.Unattributed)
		}
		byName[st.Name] = st.ErrorRatio
	}
	// A fast-failing instance is a black hole for least-connections
	// balancers that do not count its 503s as failures.
	for _, name := range []string{"nginx:least_conn", "haproxy:leastconn", "lbchaos:least-inflight"} {
		if byName[name] < 0.3 {
			t.Errorf("%s: error ratio %.3f, want the black hole (> 0.3 with 4 instances)", name, byName[name])
		}
	}
	if r := byName["nginx:least_conn(next_upstream=error|timeout|http_503)"]; r > 0.01 {
		t.Errorf("nginx retrying 503s elsewhere: error ratio %.3f, want < 0.01", r)
	}
	if r := byName["haproxy:random(2)+observe(error_limit=5,on_error=mark-down)"]; r > 0.05 {
		t.Errorf("haproxy marking the server down: error ratio %.3f, want < 0.05", r)
	}
	if left := proxyLeftovers(t); len(left) > 0 {
		t.Errorf("proxy processes left behind: %q", left)
	}
	if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "lbchaos-nginx-*")); len(dirs) > 0 {
		t.Errorf("proxy directories left behind: %v", dirs)
	}
}

// TestProxyTimeoutsAreAttributed checks that a request the client gave up
// on is attributed from the proxy's access log.
func TestProxyTimeoutsAreAttributed(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through real proxies")
	}
	needProxy(t, strategies.ProxyNginx)
	needProxy(t, strategies.ProxyHAProxy)
	exp := mustExperiment(t, "proxy-hang", `
duration: 1s
rate: 100
timeout: 300ms
instances: {count: 3, workers: 0, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 1, at: 0s, fault: {mode: hang}}
strategies: [nginx:round_robin, haproxy:roundrobin, lbchaos:round-robin]
`)
	sum, err := Run(context.Background(), exp, Options{LbchaosBinary: buildLbchaos(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sum.Strategies {
		checkAccounting(t, st)
		hung := st.Instances[1]
		if st.Unattributed != 0 || hung.Timeouts == 0 || hung.Timeouts != hung.Requests {
			t.Errorf("%s: %d unattributed; hung instance %d requests, %d timeouts; want every timeout attributed to it",
				st.Name, st.Unattributed, hung.Requests, hung.Timeouts)
		}
		if r := float64(hung.Requests) / float64(st.Requests); r < 0.25 || r > 0.42 {
			t.Errorf("%s: hung instance got %.2f of requests under round robin, want about a third", st.Name, r)
		}
	}
}

func TestProxyErrors(t *testing.T) {
	needProxy(t, strategies.ProxyNginx)
	needProxy(t, strategies.ProxyHAProxy)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	backends := []Backend{{ID: 0, URL: u}}
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
			if left := proxyLeftovers(t); len(left) > 0 {
				t.Errorf("processes left behind: %q", left)
			}
		})
	}

	t.Run("not installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		old := sbinDir
		sbinDir = t.TempDir()
		defer func() { sbinDir = old }()
		exp := mustExperiment(t, "no-nginx", `
duration: 1s
rate: 10
instances: {count: 1, service: {dist: fixed, value: 1ms}}
strategies: [nginx:least_conn]
`)
		_, err := Run(context.Background(), exp, Options{})
		if err == nil || !strings.Contains(err.Error(), "nginx is not installed: run `make deps`") {
			t.Errorf("error %v, want one saying how to install nginx", err)
		}
	})
	t.Run("unsupported experiment", func(t *testing.T) {
		exp := mustExperiment(t, "proxy-replicas", `
duration: 1s
rate: 10
replicas: 2
instances: {count: 1, service: {dist: fixed, value: 1ms}}
strategies: [haproxy:leastconn]
`)
		_, err := Run(context.Background(), exp, Options{})
		if err == nil || !strings.Contains(err.Error(), "replicas (2) apply to built-in strategies") {
			t.Errorf("error %v", err)
		}
	})
}

func TestGeneratedConfigs(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	cfg := func(spec string) proxyConfig {
		ps, err := strategies.ParseProxy(spec)
		if err != nil {
			t.Fatal(err)
		}
		return proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []Backend{{ID: 0, URL: b0}, {ID: 1, URL: b1}}, timeout: 30 * time.Second, dir: "/d"}
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

func TestProxyServer(t *testing.T) {
	// Backend 0 streams two chunks with a pause; backend 1 waits for its
	// client to go away and reports it.
	release := make(chan struct{})
	cancelled := make(chan struct{}, 1)
	b0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Lbchaos-Instance", "0")
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "second\n")
	}))
	defer b0.Close()
	b1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		cancelled <- struct{}{}
	}))
	defer b1.Close()
	u0, _ := url.Parse(b0.URL)
	u1, _ := url.Parse(b1.URL)
	var log strings.Builder
	p, err := NewProxyServer(ProxyServerConfig{Strategy: "round-robin", Backends: []*url.URL{u0, u1}, Timeout: 10 * time.Second, AccessLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()

	// Round robin: the first request goes to backend 0, which streams.
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/x", nil)
	req.Header.Set(seqHeader, "7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get(UpstreamHeader); got != "0" {
		t.Errorf("%s = %q, want 0", UpstreamHeader, got)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first chunk %q, %v: want it before the backend writes the second", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "second\n" {
		t.Errorf("rest %q", rest)
	}

	// The second goes to backend 1; cancelling the client cancels it there.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, front.URL+"/y", nil)
	req.Header.Set(seqHeader, "8")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend never saw the client's cancellation")
	}
	<-errc

	// Stats and the access log.
	deadline := time.Now().Add(5 * time.Second)
	var stats struct {
		Strategy string         `json:"strategy"`
		Backends []BackendStats `json:"backends"`
	}
	for {
		resp, err := http.Get(front.URL + "/_lbchaos/stats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&stats)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if stats.Backends[1].Requests == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stats.Strategy != "round-robin" || len(stats.Backends) != 2 ||
		stats.Backends[0].Requests != 1 || stats.Backends[0].Errors != 0 ||
		stats.Backends[1].Requests != 1 || stats.Backends[1].Errors != 1 || stats.Backends[0].InFlight+stats.Backends[1].InFlight != 0 {
		t.Errorf("stats %+v", stats)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || lines[0] != "7 0 200" || !strings.HasPrefix(lines[1], "8 1 ") {
		t.Errorf("access log %q, want \"7 0 200\" and \"8 1 ...\"", lines)
	}
}

// TestInterruptedProxyRunLeavesNothing cancels a run in the middle of each
// proxy's attack, as Ctrl-C does, and looks for the proxy's process and
// directory.
func TestInterruptedProxyRunLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through real proxies")
	}
	needProxy(t, strategies.ProxyNginx)
	needProxy(t, strategies.ProxyHAProxy)
	for _, name := range []string{"nginx:least_conn", "haproxy:leastconn", "lbchaos:p2c"} {
		t.Run(name, func(t *testing.T) {
			exp := mustExperiment(t, "proxy-interrupt", `
duration: 10s
rate: 200
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: ["`+name+`"]
`)
			ctx, cancel := context.WithCancel(context.Background())
			var once sync.Once
			opts := Options{LbchaosBinary: buildLbchaos(t), Progress: func(p Progress) {
				if p.Elapsed >= time.Second {
					once.Do(cancel)
				}
			}}
			sum, err := Run(ctx, exp, opts)
			if !errors.Is(err, ErrInterrupted) || sum == nil || !sum.Partial {
				t.Fatalf("err %v, partial %v; want an interrupted, partial run", err, sum != nil && sum.Partial)
			}
			if left := proxyLeftovers(t); len(left) > 0 {
				t.Errorf("processes left behind: %q", left)
			}
			for _, pat := range []string{"lbchaos-nginx-*", "lbchaos-haproxy-*", "lbchaos-lbchaos-*"} {
				if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), pat)); len(dirs) > 0 {
					t.Errorf("directories left behind: %v", dirs)
				}
			}
		})
	}
}

package proxies

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// instanceBackends starts n HTTP backends that name themselves in
// faultyserver.InstanceHeader; delay(id) is how long instance id takes.
func instanceBackends(t *testing.T, n int, delay func(id int) time.Duration) []*url.URL {
	t.Helper()
	var out []*url.URL
	for id := range n {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if d := delay(id); d > 0 {
				time.Sleep(d)
			}
			w.Header().Set(faultyserver.InstanceHeader, strconv.Itoa(id))
			io.WriteString(w, "ok")
		}))
		t.Cleanup(s.Close)
		u, _ := url.Parse(s.URL)
		out = append(out, u)
	}
	return out
}

// oneConnClient is an HTTP client that holds at most one connection.
func oneConnClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
}

// get sends one request and returns the instance that answered it.
func get(t *testing.T, c *http.Client, u *url.URL) int {
	t.Helper()
	resp, err := c.Get(u.String() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	id, err := strconv.Atoi(resp.Header.Get(faultyserver.InstanceHeader))
	if err != nil {
		t.Fatalf("status %d, no instance header: %v", resp.StatusCode, resp.Header)
	}
	return id
}

func needL4(t *testing.T) {
	runtest.Need(t, Installed(proxyspec.Nginx, "unused"))
	runtest.Need(t, Installed(proxyspec.HAProxy, "unused"))
	_, err := nginxStreamModule()
	runtest.Need(t, err)
}

// TestL4PinsConnections: at L4 every request of a client connection
// reaches the instance the connection was given, and connections opened
// side by side spread over the instances.
func TestL4PinsConnections(t *testing.T) {
	needL4(t)
	backends := instanceBackends(t, 4, func(int) time.Duration { return 0 })
	for _, spec := range []string{"haproxy:roundrobin+tcp", "haproxy:leastconn+tcp", "nginx:round_robin+stream", "nginx:least_conn+stream"} {
		t.Run(spec, func(t *testing.T) {
			x, err := Start(context.Background(), spec, "", backends, 5*time.Second, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			// One connection, 20 requests: one instance.
			c := oneConnClient()
			first := get(t, c, x.URL())
			for range 19 {
				if id := get(t, c, x.URL()); id != first {
					t.Fatalf("a request on the connection pinned to instance %d reached instance %d", first, id)
				}
			}
			c.CloseIdleConnections()
			// Give the proxy time to see that connection end: until it
			// does, least connections still counts it on its instance.
			time.Sleep(200 * time.Millisecond)
			// Four connections held open at once: round robin and least
			// connections give each its own instance.
			seen := map[int]int{}
			var clients []*http.Client
			for range 4 {
				c := oneConnClient()
				clients = append(clients, c)
				seen[get(t, c, x.URL())]++
			}
			// And each stays where it went.
			for _, c := range clients {
				id := get(t, c, x.URL())
				if again := get(t, c, x.URL()); again != id {
					t.Errorf("connection moved from instance %d to %d", id, again)
				}
				c.CloseIdleConnections()
			}
			if len(seen) != 4 {
				t.Errorf("4 connections open at once reached instances %v, want 4 distinct", seen)
			}
		})
	}
}

// TestL4ConnectionLog: the connection log maps each client connection
// (local port, time of use) to the instance it went to.
func TestL4ConnectionLog(t *testing.T) {
	needL4(t)
	backends := instanceBackends(t, 3, func(int) time.Duration { return 0 })
	for _, spec := range []string{"haproxy:roundrobin+tcp", "nginx:round_robin+stream"} {
		t.Run(spec, func(t *testing.T) {
			x, err := Start(context.Background(), spec, "", backends, 5*time.Second, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			type use struct {
				port, id int
				at       time.Time
			}
			var uses []use
			for range 6 {
				c := oneConnClient()
				var port int
				tr := c.Transport.(*http.Transport)
				dial := tr.DialContext
				if dial == nil {
					dial = (&net.Dialer{}).DialContext
				}
				tr.DialContext = func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
					conn, err = dial(ctx, network, addr)
					if err == nil {
						port = conn.LocalAddr().(*net.TCPAddr).Port
					}
					return conn, err
				}
				at := time.Now()
				id := get(t, c, x.URL())
				uses = append(uses, use{port, id, at})
				c.CloseIdleConnections()
			}
			x.Stop()
			cm, err := x.ConnAttribution()
			if err != nil {
				t.Fatal(err)
			}
			if cm.Len() < 6 {
				t.Errorf("connection log has %d connections, want at least 6", cm.Len())
			}
			for _, u := range uses {
				if id, ok := cm.Instance(u.port, u.at); !ok || id != u.id {
					t.Errorf("connection from port %d: log says instance %d (%v), answered by %d", u.port, id, ok, u.id)
				}
			}
			if _, err := x.Attribution(); err == nil || !strings.Contains(err.Error(), "balances connections") {
				t.Errorf("Attribution at L4: error %v, want one saying it balances connections", err)
			}
		})
	}
}

// TestConnLog: the connection logs' lines as nginx and HAProxy write them,
// and the connection a request used when its port was used twice.
func TestConnLog(t *testing.T) {
	ids := map[string]int{"127.0.0.1:9001": 0, "127.0.0.1:9002": 1, "i0": 0, "i1": 1}
	m := &ConnMap{ids: ids, ports: map[int][]connSession{}}
	for _, tt := range []struct {
		kind, line string
		port       int
		start      time.Time
		upstream   string
	}{
		{"nginx", "40000 127.0.0.1:9001 1796131934.901 0.500", 40000, time.UnixMilli(1796131934401), "127.0.0.1:9001"},
		{"nginx", "40000 127.0.0.1:9001, 127.0.0.1:9002 1796131940.000 2.000", 40000, time.UnixMilli(1796131938000), "127.0.0.1:9002"},
		{"haproxy", "40001 i1 1796131934.042 1500", 40001, time.UnixMilli(1796131934042), "i1"},
	} {
		port, s, ok := parseConnLine(tt.kind, tt.line)
		if !ok || port != tt.port || !s.start.Equal(tt.start) || s.upstream != tt.upstream {
			t.Errorf("%s %q: port %d, %+v, %v; want port %d, start %v, upstream %s", tt.kind, tt.line, port, s, ok, tt.port, tt.start, tt.upstream)
		}
		m.ports[port] = append(m.ports[port], s)
	}
	for _, bad := range []string{"", "- - - -", "40000 i0 x 1", "40000 i0"} {
		if _, _, ok := parseConnLine("haproxy", bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	for _, tt := range []struct {
		port int
		at   time.Time
		want int
		ok   bool
	}{
		{40000, time.UnixMilli(1796131934600), 0, true}, // in the first connection from 40000
		{40000, time.UnixMilli(1796131939000), 1, true}, // in the second, after nginx's retry
		{40001, time.UnixMilli(1796131934042), 1, true},
		{40002, time.UnixMilli(1796131934042), 0, false}, // no such connection
	} {
		if id, ok := m.Instance(tt.port, tt.at); id != tt.want || ok != tt.ok {
			t.Errorf("Instance(%d, %v) = %d, %v; want %d, %v", tt.port, tt.at, id, ok, tt.want, tt.ok)
		}
	}
	var nilMap *ConnMap
	if _, ok := nilMap.Instance(40000, time.Now()); ok {
		t.Error("a nil map attributed a connection")
	}
}

// TestGeneratedL4Configs: the connection-level configurations, and the
// proxies' own checks accept them.
func TestGeneratedL4Configs(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	for _, tt := range []struct {
		spec     string
		want     []string
		not      []string
		needBins []string
	}{
		{"nginx:least_conn(max_fails=3,fail_timeout=5s)+stream", []string{"load_module /", "ngx_stream_module.so;", "stream {", "zone lbchaos_backends 256k;", "least_conn;",
			"server 127.0.0.1:9002 max_fails=3 fail_timeout=5s;", "log_format lbchaos '$remote_port $upstream_addr $msec $session_time';",
			"proxy_next_upstream on;", "proxy_timeout 125000ms;"}, []string{"http {", "proxy_http_version"}, []string{"nginx"}},
		{"nginx:round_robin(next_upstream=off)+stream", []string{"proxy_next_upstream off;"}, []string{"least_conn;"}, []string{"nginx"}},
		{"haproxy:leastconn+tcp+check(inter=500ms)", []string{"mode tcp", "balance leastconn", `log-format "%cp %s %Ts.%ms %Tt"`,
			"server i1 127.0.0.1:9002 check inter 500ms fall 3 rise 2\n", "timeout client 125000ms"}, []string{"httpchk", "mode http", "X-Lbchaos-Upstream"}, []string{"haproxy"}},
		{"haproxy:random(3)+tcp", []string{"balance random(3)", "server i0 127.0.0.1:9001\n"}, []string{" check"}, []string{"haproxy"}},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			ps, err := proxyspec.Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			cfg := proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: 30 * time.Second, dir: t.TempDir()}
			var text string
			if ps.Kind == proxyspec.Nginx {
				text = nginxStreamConfig(cfg, "/d/access.log", "/usr/lib/nginx/modules/ngx_stream_module.so")
			} else {
				text = haproxyTCPConfig(cfg)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("config lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(text, w) {
					t.Errorf("config has %q:\n%s", w, text)
				}
			}
			needL4(t)
			bin, _ := proxyBinary(ps.Kind, "")
			if _, err := configure(context.Background(), bin, cfg, cfg.dir+"/access.log"); err != nil {
				t.Errorf("%s rejects the configuration: %v", ps.Kind, err)
			}
		})
	}
}

// TestMissingProxyParts: a missing caddy or nginx stream module stops the
// run before it starts, saying how to install it.
func TestMissingProxyParts(t *testing.T) {
	t.Run("caddy", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		old := sbinDir
		sbinDir = t.TempDir()
		defer func() { sbinDir = old }()
		err := Check("caddy:least_conn", "", "")
		if err == nil || !strings.Contains(err.Error(), "caddy is not installed: run `make deps` (it runs `apt-get install caddy`)") {
			t.Errorf("error %v, want one saying how to install caddy", err)
		}
	})
	t.Run("nginx stream module", func(t *testing.T) {
		runtest.Need(t, Installed(proxyspec.Nginx, "unused"))
		old := nginxStreamModules
		nginxStreamModules = []string{t.TempDir() + "/ngx_stream_module.so"}
		defer func() { nginxStreamModules = old }()
		err := Check("nginx:least_conn+stream", "", "")
		if err == nil || !strings.Contains(err.Error(), "nginx's stream module is not installed") || !strings.Contains(err.Error(), "apt-get install libnginx-mod-stream") {
			t.Errorf("error %v, want one saying how to install the stream module", err)
		}
		if err := Check("nginx:least_conn", "", ""); err != nil {
			t.Errorf("nginx at L7 needs no stream module: %v", err)
		}
	})
}

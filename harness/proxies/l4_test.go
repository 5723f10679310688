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
	"github.com/lbchaos/lbchaos/strategies"
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
	runtest.Need(t, Installed(strategies.ProxyNginx, "unused"))
	runtest.Need(t, Installed(strategies.ProxyHAProxy, "unused"))
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

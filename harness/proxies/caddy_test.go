package proxies

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestCaddyPolicies runs caddy with each policy in front of three
// backends and counts where 30 sequential requests went.
func TestCaddyPolicies(t *testing.T) {
	runtest.Need(t, Installed(proxyspec.Caddy, "unused"))
	backends := instanceBackends(t, 3, func(int) time.Duration { return 0 })
	for _, tt := range []struct {
		spec  string
		check func(counts [3]int) bool
		want  string
	}{
		{"caddy:round_robin", func(c [3]int) bool { return c == [3]int{10, 10, 10} }, "10 each"},
		{"caddy:first", func(c [3]int) bool { return c == [3]int{30, 0, 0} }, "all on instance 0"},
		{"caddy:least_conn", func(c [3]int) bool { return c[0]+c[1]+c[2] == 30 }, "30 answered"},
		{"caddy:random", func(c [3]int) bool { return c[0] > 0 && c[1] > 0 && c[2] > 0 }, "every instance some"},
		{"caddy:random_choose(2)", func(c [3]int) bool { return c[0] > 0 && c[1] > 0 && c[2] > 0 }, "every instance some"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			x, err := Start(context.Background(), tt.spec, "", backends, 5*time.Second, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			c := oneConnClient()
			defer c.CloseIdleConnections()
			var counts [3]int
			for range 30 {
				counts[get(t, c, x.URL())]++
			}
			if !tt.check(counts) {
				t.Errorf("requests per instance %v, want %s", counts, tt.want)
			}
		})
	}
}

// TestCaddyUnhealthyLatency: with unhealthy_latency, one slow answer
// takes an instance out for fail_duration; without it round robin keeps
// sending it its third.
func TestCaddyUnhealthyLatency(t *testing.T) {
	runtest.Need(t, Installed(proxyspec.Caddy, "unused"))
	backends := instanceBackends(t, 3, func(id int) time.Duration {
		if id == 0 {
			return 150 * time.Millisecond
		}
		return 0
	})
	for _, tt := range []struct {
		spec    string
		maxSlow int
		minSlow int
	}{
		{"caddy:round_robin", 10, 10},
		{"caddy:round_robin(fail_duration=30s,unhealthy_latency=50ms)", 1, 1},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			x, err := Start(context.Background(), tt.spec, "", backends, 5*time.Second, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			c := oneConnClient()
			defer c.CloseIdleConnections()
			var counts [3]int
			for range 30 {
				counts[get(t, c, x.URL())]++
			}
			if counts[0] < tt.minSlow || counts[0] > tt.maxSlow {
				t.Errorf("slow instance got %d of 30 requests (%v), want %d to %d", counts[0], counts, tt.minSlow, tt.maxSlow)
			}
		})
	}
}

// TestCaddyConfig: the generated configuration has no admin endpoint and
// no automatic HTTPS, caddy's names for the passive health checks, and
// caddy accepts it.
func TestCaddyConfig(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	ps, err := proxyspec.Parse("caddy:random_choose(3)(fail_duration=10s,max_fails=2,unhealthy_status=5xx|429,unhealthy_latency=250ms,unhealthy_request_count=50)")
	if err != nil {
		t.Fatal(err)
	}
	cfg := proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0}, timeout: 30 * time.Second, dir: t.TempDir()}
	b, err := caddyConfig(cfg, "/d/upstreams.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"disabled": true`, `"persist": false`, `"disable": true`, `"policy": "random_choose"`, `"choose": 3`,
		`"fail_duration": "10s"`, `"max_fails": 2`, `"unhealthy_latency": "250ms"`, `"unhealthy_request_count": 50`,
		`"dial": "127.0.0.1:9001"`, `"X-Lbchaos-Upstream": [`, `"read_timeout": "35s"`, `"filename": "/d/upstreams.log"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("config lacks %s:\n%s", w, b)
		}
	}
	var conf struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []struct {
						Handle []struct {
							HealthChecks struct {
								Passive struct {
									UnhealthyStatus []int `json:"unhealthy_status"`
								} `json:"passive"`
							} `json:"health_checks"`
						} `json:"handle"`
					} `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	if got := conf.Apps.HTTP.Servers["lbchaos"].Routes[1].Handle[0].HealthChecks.Passive.UnhealthyStatus; len(got) != 2 || got[0] != 5 || got[1] != 429 {
		t.Errorf("unhealthy_status %v, want [5 429] (5 is caddy's any 5xx)", got)
	}
	runtest.Need(t, Installed(proxyspec.Caddy, "unused"))
	bin, _ := proxyBinary(proxyspec.Caddy, "")
	if _, err := configure(context.Background(), bin, cfg, filepath.Join(cfg.dir, "upstreams.log")); err != nil {
		t.Errorf("caddy rejects the configuration: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.dir, "caddy.json")); err != nil {
		t.Error(err)
	}
}

// TestCaddyHeaderPolicy: caddy:header hashes X-Lbchaos-Key, so one key
// always reaches one instance and several keys spread.
func TestCaddyHeaderPolicy(t *testing.T) {
	runtest.Need(t, Installed(proxyspec.Caddy, "unused"))
	backends := instanceBackends(t, 3, func(int) time.Duration { return 0 })
	x, err := Start(context.Background(), "caddy:header", "", backends, 5*time.Second, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	c := oneConnClient()
	defer c.CloseIdleConnections()
	seen := map[int]bool{}
	for key := range 12 {
		var first int
		for i := range 3 {
			req, _ := http.NewRequest("GET", x.URL().String()+"/x", nil)
			req.Header.Set(strategies.KeyHeader, strconv.Itoa(key))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			id, _ := strconv.Atoi(resp.Header.Get(faultyserver.InstanceHeader))
			if i == 0 {
				first = id
			} else if id != first {
				t.Errorf("key %d reached instances %d and %d", key, first, id)
			}
		}
		seen[first] = true
	}
	if len(seen) < 2 {
		t.Errorf("12 keys all reached %v, want them spread", seen)
	}
}

package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestL4AndCaddyTimeoutsAreAttributed: a request the client gave up on
// gets no answer from a connection-level proxy, nor any header of its
// own; it is attributed by the connection it went out on and the proxy's
// connection log. Caddy's are attributed by its upstream log.
func TestL4AndCaddyTimeoutsAreAttributed(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through real proxies")
	}
	runtest.Need(t, proxies.Installed(proxyspec.Nginx, "unused"))
	runtest.Need(t, proxies.Installed(proxyspec.HAProxy, "unused"))
	runtest.Need(t, proxies.Installed(proxyspec.Caddy, "unused"))
	runtest.Need(t, proxies.Check("nginx:round_robin+stream", "", "unused"))
	exp := runtest.MustExperiment(t, "l4-hang", `
duration: 1s
rate: 100
timeout: 300ms
connections: 24
instances: {count: 3, workers: 0, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 1, at: 0s, fault: {mode: hang}}
strategies: [haproxy:roundrobin+tcp, nginx:round_robin+stream, caddy:round_robin]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		hung := st.Instances[1]
		if st.Unattributed != 0 || hung.Timeouts == 0 || hung.Timeouts != hung.Requests {
			t.Errorf("%s: %d unattributed; hung instance %d requests, %d timeouts; want every timeout attributed to it",
				st.Name, st.Unattributed, hung.Requests, hung.Timeouts)
		}
		for _, in := range st.Instances {
			if in.ID != 1 && in.Timeouts != 0 {
				t.Errorf("%s: instance %d has %d timeouts, want them all on the hung instance", st.Name, in.ID, in.Timeouts)
			}
		}
		t.Logf("%s: %d requests, hung instance %d (%d timeouts)", st.Name, st.Requests, hung.Requests, hung.Timeouts)
	}
	if left := runtest.ProxyLeftovers(t); len(left) > 0 {
		t.Errorf("proxy processes left behind: %q", left)
	}
	for _, pat := range []string{"lbchaos-nginx-*", "lbchaos-haproxy-*", "lbchaos-caddy-*"} {
		if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), pat)); len(dirs) > 0 {
			t.Errorf("directories left behind: %v", dirs)
		}
	}
}

// TestProxyClientRejections: what the proxy client cannot do is said
// before anything starts.
func TestProxyClientRejections(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{"h2c through a proxy", `
duration: 1s
rate: 10
protocol: h2c
connections: 2
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [haproxy:roundrobin+tcp, caddy:least_conn]
`, "strategy caddy:least_conn: protocol h2c: the configuration lbchaos writes for caddy takes HTTP/1.1 from its clients"},
		{"grpc through a proxy", `
duration: 1s
rate: 10
protocol: grpc
connections: 2
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [nginx:least_conn+stream]
`, "strategy nginx:least_conn+stream: protocol grpc: a proxy under test takes protocol http1, or h2c at L4"},
		{"L4 with generators", `
duration: 1s
rate: 10
generators: 2
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [nginx:least_conn+stream]
`, "strategy nginx:least_conn+stream: generators (2): a connection-level proxy's unanswered requests are attributed by the client connection"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "proxy-client", tt.body)
			// The engine's Check, which runs before anything starts.
			if err := (&Engine{opts: Options{LbchaosBinary: "unused"}}).checkProxies(exp); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestL4PinsH2CConnections: over h2c every request of a client multiplexes
// onto its connections, so a connection-level proxy gives all of them to
// the instances those connections were opened to: two connections, two
// instances of four. The streams that hang on one are attributed to it by
// their connection.
func TestL4PinsH2CConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through real proxies")
	}
	runtest.Need(t, proxies.Installed(proxyspec.Nginx, "unused"))
	runtest.Need(t, proxies.Installed(proxyspec.HAProxy, "unused"))
	runtest.Need(t, proxies.Check("nginx:round_robin+stream", "", "unused"))
	exp := runtest.MustExperiment(t, "l4-h2c", `
duration: 1s
rate: 100
timeout: 300ms
protocol: h2c
connections: 2
instances: {count: 4, workers: 0, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 1, at: 0s, fault: {mode: hang}}
strategies: [haproxy:roundrobin+tcp, nginx:round_robin+stream]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		var reached []int
		for _, in := range st.Instances {
			if in.Requests > 0 {
				reached = append(reached, in.ID)
				if in.Share < 0.4 || in.Share > 0.6 {
					t.Errorf("%s: instance %d has %.2f of requests, want about half (one of two connections)", st.Name, in.ID, in.Share)
				}
			}
			if in.Timeouts != 0 && in.ID != 1 {
				t.Errorf("%s: instance %d has %d timeouts, want them all on the hung instance", st.Name, in.ID, in.Timeouts)
			}
		}
		if len(reached) != 2 || st.Unattributed != 0 {
			t.Errorf("%s: instances %v reached, %d unattributed; want two instances (two connections), every request attributed", st.Name, reached, st.Unattributed)
		}
		hung := st.Instances[1]
		if hung.Timeouts != hung.Requests {
			t.Errorf("%s: hung instance %d requests, %d timeouts", st.Name, hung.Requests, hung.Timeouts)
		}
		t.Logf("%s: %d requests, instances %v, hung instance %d (%d timeouts)", st.Name, st.Requests, reached, hung.Requests, hung.Timeouts)
	}
}

// TestInterruptedL4AndCaddyRunLeavesNothing cancels a run in the middle of
// the attack, as Ctrl-C does: a connection-level proxy with the client's
// connections open, and caddy, are stopped, their directories removed.
func TestInterruptedL4AndCaddyRunLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through real proxies")
	}
	runtest.Need(t, proxies.Installed(proxyspec.HAProxy, "unused"))
	runtest.Need(t, proxies.Installed(proxyspec.Caddy, "unused"))
	runtest.Need(t, proxies.Check("nginx:round_robin+stream", "", "unused"))
	for _, name := range []string{"haproxy:leastconn+tcp", "nginx:least_conn+stream", "caddy:least_conn"} {
		t.Run(name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "l4-interrupt", `
duration: 10s
rate: 200
connections: 8
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 1, at: 0s, fault: {mode: hang}}
strategies: ["`+name+`"]
`)
			ctx, cancel := context.WithCancel(context.Background())
			var once sync.Once
			progress := func(p harness.Progress) {
				if p.Elapsed >= time.Second {
					once.Do(cancel)
				}
			}
			start := time.Now()
			sum, err := harness.Run(ctx, exp, harness.Options{Engine: New(Options{}), Progress: progress})
			if !errors.Is(err, harness.ErrInterrupted) || sum == nil || !sum.Partial {
				t.Fatalf("err %v, partial %v; want an interrupted, partial run", err, sum != nil && sum.Partial)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("the interrupted run took %v to end", d)
			}
			if left := runtest.ProxyLeftovers(t); len(left) > 0 {
				t.Errorf("processes left behind: %q", left)
			}
			for _, pat := range []string{"lbchaos-nginx-*", "lbchaos-haproxy-*", "lbchaos-caddy-*"} {
				if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), pat)); len(dirs) > 0 {
					t.Errorf("directories left behind: %v", dirs)
				}
			}
		})
	}
}

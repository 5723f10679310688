package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
)

// fixedFleet hands out backends started outside the run, every time; its
// Close leaves them running.
type fixedFleet struct{ backends []fleet.Backend }

func (f fixedFleet) Name() string { return "fixed" }
func (f fixedFleet) Start(context.Context, fleet.Spec) (fleet.Fleet, error) {
	return f, nil
}
func (f fixedFleet) Backends() []fleet.Backend { return f.backends }
func (f fixedFleet) Close() error              { return nil }

// BenchmarkSidecarAtBaseline measures what the fault sidecar (lbchaos
// serve --upstream) adds under the baseline load: 10 in-process instances
// (8 workers, fixed 10 ms), Poisson 4000 req/s, round robin, sent to the
// same servers directly and through one hop per instance, in alternating
// rounds (see hopRounds): the sidecar (no fault) in this process; a bare
// TCP relay in this process, which copies bytes both ways and parses
// nothing, the least a Go hop sharing the harness's processors costs; and
// nginx (one process, one worker, a keep-alive upstream per instance) when
// it is installed. It reports the medians over the rounds of the p50 and
// p99 each hop added to the direct run's, and the sidecar's added p50 over
// the relay's (sidecar-over-relay) and over nginx's (sidecar-over-nginx).
// Run it with -benchtime 1x; LBCHAOS_BENCH_DURATION sets the attack length
// (default 10s), LBCHAOS_BENCH_ROUNDS the rounds (default 3).
func BenchmarkSidecarAtBaseline(b *testing.B) {
	exp, direct := sidecarBench(b)
	var sidecars, relays fixedFleet
	for _, s := range direct.backends {
		sc, err := faultyserver.NewSidecar(faultyserver.SidecarConfig{ID: s.ID, Upstream: s.URL.String(), HealthPath: faultyserver.HealthPath, Seed: uint64(s.ID) + 1})
		if err != nil {
			b.Fatal(err)
		}
		ln := listenLoopback(b)
		hs := &http.Server{Handler: sc}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.Error(err)
			}
		}()
		defer func() { _ = hs.Close(); sc.Close() }()
		u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		sidecars.backends = append(sidecars.backends, fleet.Backend{ID: s.ID, URL: u, Control: &faultyserver.Client{BaseURL: u.String()}})

		rl := listenLoopback(b)
		defer rl.Close()
		go relay(rl, s.URL.Host)
		relays.backends = append(relays.backends, fleet.Backend{ID: s.ID, URL: &url.URL{Scheme: "http", Host: rl.Addr().String()}, Control: s.Control})
	}
	hops := []hop{{"direct", direct}, {"relay", relays}, {"sidecar", sidecars}}
	if ngx, stop := nginxHops(b, direct.backends); stop != nil {
		defer stop()
		hops = append(hops, hop{"nginx", ngx})
	}
	added50, added99 := hopRounds(b, exp, hops)
	sc := median(added50["sidecar"])
	b.ReportMetric(sc, "p50-added-ms")
	b.ReportMetric(median(added99["sidecar"]), "p99-added-ms")
	b.ReportMetric(median(added50["relay"]), "relay-p50-added-ms")
	b.ReportMetric(sc/median(added50["relay"]), "sidecar-over-relay")
	if _, ok := added50["nginx"]; ok {
		b.ReportMetric(median(added50["nginx"]), "nginx-p50-added-ms")
		b.ReportMetric(sc/median(added50["nginx"]), "sidecar-over-nginx")
	}
}

// BenchmarkSidecarProcesses measures the sidecar in the shape it is
// deployed in, beside a container or an external instance: a process per
// instance, lbchaos serve --upstream with the Docker provider's runtime
// tuning, against one nginx process per instance, under the load of
// BenchmarkSidecarAtBaseline and in alternating rounds with the direct
// run. It reports the medians of the p50 and p99 the sidecars added
// (procs-p50-added-ms, procs-p99-added-ms), nginx's (nginx-procs-...) and
// their ratio (procs-over-nginx-procs). LBCHAOS_BIN names the lbchaos
// binary (built when unset); otherwise as BenchmarkSidecarAtBaseline.
func BenchmarkSidecarProcesses(b *testing.B) {
	exp, direct := sidecarBench(b)
	hops := []hop{{"direct", direct}, {"procs", sidecarProcesses(b, direct.backends)}}
	if _, err := exec.LookPath("nginx"); err == nil {
		hops = append(hops, hop{"nginx-procs", nginxProcesses(b, direct.backends)})
	} else {
		b.Logf("nginx not installed: no nginx hop")
	}
	added50, added99 := hopRounds(b, exp, hops)
	procs := median(added50["procs"])
	b.ReportMetric(procs, "procs-p50-added-ms")
	b.ReportMetric(median(added99["procs"]), "procs-p99-added-ms")
	if _, ok := added50["nginx-procs"]; ok {
		b.ReportMetric(median(added50["nginx-procs"]), "nginx-procs-p50-added-ms")
		b.ReportMetric(median(added99["nginx-procs"]), "nginx-procs-p99-added-ms")
		b.ReportMetric(procs/median(added50["nginx-procs"]), "procs-over-nginx-procs")
	}
}

// sidecarBench returns the sidecar benchmarks' experiment (baseline with
// round robin) and its instances, in this process until the benchmark
// ends.
func sidecarBench(b *testing.B) (*experiments.Experiment, fixedFleet) {
	base, d := benchBaseline(b)
	exp, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	exp.Expect = nil // hopRounds checks errors and the generator itself
	servers, err := process.Provider{}.Start(context.Background(), fleet.Spec{Instances: exp.Instances, Seed: exp.Seed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = servers.Close() })
	return exp, fixedFleet{servers.Backends()}
}

// hopRounds runs exp through each hop in turn, b.N times benchRounds()
// rounds, and returns per hop the p50 and p99 it added, in each round, to
// the first hop's (the direct run). A round in which any run had errors or
// a generator behind schedule is logged and left out whole, its direct run
// included: on this VM a stall of the host now and then makes the
// open-loop load pile up for seconds, whichever hop is running, and such
// a round measures the stall. rounds-left-out reports how many; the
// benchmark fails when no round is left.
func hopRounds(b *testing.B, exp *experiments.Experiment, hops []hop) (added50, added99 map[string][]float64) {
	added50, added99 = map[string][]float64{}, map[string][]float64{}
	rounds, out := 0, 0
	for range b.N {
		for range benchRounds() {
			rounds++
			p50 := make([]float64, len(hops))
			p99 := make([]float64, len(hops))
			var bad []string
			for i, h := range hops {
				sum, err := run(context.Background(), exp, Options{Provider: h.p})
				if err != nil {
					b.Fatal(err)
				}
				st := sum.Strategies[0]
				if st.GeneratorBehind || st.ErrorRatio > 0 {
					bad = append(bad, fmt.Sprintf("%s (generator behind %v, errors %.4f, timeouts %.4f)", h.name, st.GeneratorBehind, st.ErrorRatio, st.TimeoutRatio))
				}
				b.Logf("%-11s p50 %.3f p99 %.3f ms", h.name, st.LatencyMs.P50, st.LatencyMs.P99)
				p50[i], p99[i] = st.LatencyMs.P50, st.LatencyMs.P99
			}
			if len(bad) > 0 {
				out++
				b.Logf("round %d left out: %s", rounds, strings.Join(bad, ", "))
				continue
			}
			for i, h := range hops[1:] {
				added50[h.name] = append(added50[h.name], p50[i+1]-p50[0])
				added99[h.name] = append(added99[h.name], p99[i+1]-p99[0])
			}
		}
	}
	b.ReportMetric(float64(out), "rounds-left-out")
	if out == rounds {
		b.Fatalf("every one of %d rounds had errors or a generator behind schedule: nothing measured", rounds)
	}
	return added50, added99
}

// hop is one way of reaching the instances in the sidecar benchmarks.
type hop struct {
	name string
	p    fleet.Provider
}

// sidecarProcesses starts one lbchaos serve --upstream process in front of
// each backend, with the environment a sidecar container gets, and returns
// them; the benchmark's cleanup stops them.
func sidecarProcesses(b *testing.B, backends []fleet.Backend) fixedFleet {
	bin, dir := runtest.Binary(b), b.TempDir()
	env := os.Environ()
	for k, v := range docker.ServeTuning() {
		env = append(env, k+"="+v)
	}
	var f fixedFleet
	for _, s := range backends {
		ln := listenLoopback(b)
		addr := ln.Addr().String()
		_ = ln.Close()
		cmd := exec.Command(bin, "serve", "--upstream", s.URL.String(), "--listen", addr, "--id", strconv.Itoa(s.ID))
		cmd.Env = env
		log := filepath.Join(dir, "sidecar-"+strconv.Itoa(s.ID)+".log")
		out, err := os.Create(log)
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		endWithParent(cmd) // no sidecar outlives a benchmark killed outright
		err = cmd.Start()
		_ = out.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if err := waitListening(addr, 10*time.Second); err != nil {
			text, _ := os.ReadFile(log)
			b.Fatalf("sidecar %d: %v\n%s", s.ID, err, text)
		}
		u := &url.URL{Scheme: "http", Host: addr}
		f.backends = append(f.backends, fleet.Backend{ID: s.ID, URL: u, Control: &faultyserver.Client{BaseURL: u.String()}})
	}
	return f
}

// nginxProcesses starts one nginx process in front of each backend (see
// nginxHops), the way a sidecar runs, and returns them; the benchmark's
// cleanup stops them. Call it only when nginx is installed.
func nginxProcesses(b *testing.B, backends []fleet.Backend) fixedFleet {
	var f fixedFleet
	for _, s := range backends {
		one, stop := nginxHops(b, []fleet.Backend{s})
		b.Cleanup(stop)
		f.backends = append(f.backends, one.backends...)
	}
	return f
}

func listenLoopback(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// relay accepts connections on ln until it is closed and copies each one's
// bytes both ways to a connection of its own to upstream (host:port).
func relay(ln net.Listener, upstream string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer u.Close()
			go func() {
				_, _ = io.Copy(u, c)
				_ = u.(*net.TCPConn).CloseWrite()
			}()
			_, _ = io.Copy(c, u)
		}()
	}
}

// nginxHops starts one nginx process (no master, so that killing it
// leaves no worker behind) that fronts each backend on a port of
// its own, as the sidecars do, and returns them and a stop function; a nil
// stop when nginx is not installed.
func nginxHops(b *testing.B, backends []fleet.Backend) (fixedFleet, func()) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		b.Logf("nginx not installed: no nginx hop")
		return fixedFleet{}, nil
	}
	dir := b.TempDir()
	var conf strings.Builder
	fmt.Fprintf(&conf, "master_process off;\npid %s/nginx.pid;\nerror_log %s/error.log;\nevents { worker_connections 4096; }\nhttp {\n  access_log off;\n", dir, dir)
	var f fixedFleet
	for _, s := range backends {
		ln := listenLoopback(b)
		addr := ln.Addr().String()
		_ = ln.Close()
		fmt.Fprintf(&conf, "  upstream u%d { server %s; keepalive 64; }\n", s.ID, s.URL.Host)
		fmt.Fprintf(&conf, "  server { listen %s; location / { proxy_pass http://u%d; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }\n", addr, s.ID)
		f.backends = append(f.backends, fleet.Backend{ID: s.ID, URL: &url.URL{Scheme: "http", Host: addr}, Control: s.Control})
	}
	conf.WriteString("}\n")
	cfg := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cfg, []byte(conf.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", cfg, "-g", "daemon off;")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	endWithParent(cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	for _, s := range f.backends {
		if err := waitListening(s.URL.Host, 5*time.Second); err != nil {
			stop()
			b.Fatalf("nginx: %v\n%s", err, out.String())
		}
	}
	return f, stop
}

// waitListening waits until addr accepts a connection, for up to d.
func waitListening(addr string, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s not listening after %v: %w", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package real

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
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
// same servers once directly and once through one sidecar per instance
// (no fault), in alternating rounds. It reports the medians over the
// rounds of p50 and p99 added by the sidecar. Run it with -benchtime 1x;
// LBCHAOS_BENCH_DURATION sets the attack length (default 10s),
// LBCHAOS_BENCH_ROUNDS the rounds (default 3).
func BenchmarkSidecarAtBaseline(b *testing.B) {
	base, d := benchBaseline(b)
	exp, err := base.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	exp.Expect = nil // the benchmark checks errors and the generator itself
	servers, err := process.Provider{}.Start(context.Background(), fleet.Spec{Instances: exp.Instances, Seed: exp.Seed})
	if err != nil {
		b.Fatal(err)
	}
	defer servers.Close()
	direct := fixedFleet{servers.Backends()}
	var fronted fixedFleet
	for _, s := range direct.backends {
		sc, err := faultyserver.NewSidecar(faultyserver.SidecarConfig{ID: s.ID, Upstream: s.URL.String(), HealthPath: faultyserver.HealthPath, Seed: uint64(s.ID) + 1})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		hs := &http.Server{Handler: sc}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.Error(err)
			}
		}()
		defer func() { _ = hs.Close(); sc.Close() }()
		u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		fronted.backends = append(fronted.backends, fleet.Backend{ID: s.ID, URL: u, Control: &faultyserver.Client{BaseURL: u.String()}})
	}
	rounds := benchRounds()
	var add50, add99 []float64
	for range b.N {
		for range rounds {
			var p50, p99 [2]float64
			for i, p := range []fleet.Provider{direct, fronted} {
				sum, err := run(context.Background(), exp, Options{Provider: p})
				if err != nil {
					b.Fatal(err)
				}
				st := sum.Strategies[0]
				if st.GeneratorBehind || st.ErrorRatio > 0 {
					b.Errorf("%s: generator behind %v, errors %.4f", p.Name(), st.GeneratorBehind, st.ErrorRatio)
				}
				p50[i], p99[i] = st.LatencyMs.P50, st.LatencyMs.P99
			}
			b.Logf("direct p50 %.3f p99 %.3f ms; sidecar p50 %.3f p99 %.3f ms", p50[0], p99[0], p50[1], p99[1])
			add50 = append(add50, p50[1]-p50[0])
			add99 = append(add99, p99[1]-p99[0])
		}
	}
	b.ReportMetric(median(add50), "p50-added-ms")
	b.ReportMetric(median(add99), "p99-added-ms")
}

package proxies

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// BenchmarkProxyHop measures the latency each proxy adds to one request at
// a time, with no other load: a backend in this process that answers at
// once, called directly and through lbchaos proxy, nginx and HAProxy (round
// robin over that one backend), in turn, on kept-alive connections. It
// reports each proxy's added p50 and p99 in microseconds and lbchaos
// proxy's added p50 over nginx's. Unlike BenchmarkProxyOverhead (make
// bench-proxy) no queue forms, so a machine shared with other work
// disturbs it less. LBCHAOS_BIN names the lbchaos binary;
// LBCHAOS_BENCH_BINS, a comma-separated list, measures several builds of
// it side by side (named lbchaos, lbchaos2, ...).
func BenchmarkProxyHop(b *testing.B) {
	runtest.Need(b, Installed(proxyspec.Nginx, "unused"))
	runtest.Need(b, Installed(proxyspec.HAProxy, "unused"))
	bins := []string{runtest.Binary(b)}
	if v := os.Getenv("LBCHAOS_BENCH_BINS"); v != "" {
		bins = strings.Split(v, ",")
	}
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") }))
	defer be.Close()
	u, _ := url.Parse(be.URL)
	backends := []*url.URL{u}
	type target struct {
		name string
		url  string
		took []time.Duration
	}
	targets := []*target{{name: "direct", url: be.URL + "/"}}
	start := func(name, spec, bin string) {
		p, err := Start(context.Background(), spec, "", backends, 5*time.Second, bin, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		targets = append(targets, &target{name: name, url: p.URL().String() + "/"})
	}
	for i, bin := range bins {
		name := "lbchaos"
		if i > 0 {
			name = fmt.Sprintf("lbchaos%d", i+1)
		}
		start(name, "lbchaos:round-robin", bin)
	}
	start("nginx", "nginx:round_robin", "")
	start("haproxy", "haproxy:roundrobin", "")

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	get := func(url string) time.Duration {
		begin := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d", url, resp.StatusCode)
		}
		return time.Since(begin)
	}
	for _, t := range targets { // warm the connections
		for range 50 {
			get(t.url)
		}
	}
	for b.Loop() {
		for _, t := range targets {
			t.took = append(t.took, get(t.url))
		}
	}
	q := func(d []time.Duration, p float64) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))]) / 1e3
	}
	direct := targets[0].took
	b.ReportMetric(q(direct, 0.5), "direct-p50-µs")
	added := map[string]float64{}
	for _, t := range targets[1:] {
		added[t.name] = q(t.took, 0.5) - q(direct, 0.5)
		b.ReportMetric(added[t.name], t.name+"-p50-added-µs")
		b.ReportMetric(q(t.took, 0.99)-q(direct, 0.99), t.name+"-p99-added-µs")
	}
	b.ReportMetric(added["lbchaos"]/added["nginx"], "p50-ratio-vs-nginx")
}

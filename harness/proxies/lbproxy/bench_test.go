package lbproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"testing"
	"time"
)

// benchProxy starts a backend that answers at once and a proxy in front of
// it; it returns their URLs.
func benchProxy(b *testing.B) (direct, proxied string) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") }))
	b.Cleanup(be.Close)
	u, _ := url.Parse(be.URL)
	p, err := New(Config{Strategy: "round-robin", Backends: []*url.URL{u}, Timeout: 30 * time.Second, AccessLog: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	front := httptest.NewServer(p)
	b.Cleanup(func() { front.Close(); _ = p.Close() })
	return be.URL + "/", front.URL + "/"
}

func benchGet(b *testing.B, client *http.Client, url string) {
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkForwardOverhead measures the latency the proxy adds to a request over
// a direct call to the same backend, which answers at once: each iteration
// sends one request each way, one at a time, on kept-alive connections.
func BenchmarkForwardOverhead(b *testing.B) {
	direct, proxied := benchProxy(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	timed := func(url string) time.Duration {
		begin := time.Now()
		benchGet(b, client, url)
		return time.Since(begin)
	}
	var d, v []time.Duration
	for b.Loop() {
		d = append(d, timed(direct))
		v = append(v, timed(proxied))
	}
	q := func(x []time.Duration, p float64) float64 {
		sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
		return float64(x[int(p*float64(len(x)-1))]) / 1e3
	}
	b.ReportMetric(q(d, 0.5), "direct-p50-µs")
	b.ReportMetric(q(v, 0.5)-q(d, 0.5), "p50-added-µs")
}

// BenchmarkForwardThroughput measures the cost of a proxied request under
// parallel load (8 clients per core), against the backend called
// directly: the difference of the two ns/op is the proxy's hop.
func BenchmarkForwardThroughput(b *testing.B) {
	direct, proxied := benchProxy(b)
	for _, c := range []struct{ name, url string }{{"direct", direct}, {"proxy", proxied}} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					benchGet(b, client, c.url)
				}
			})
		})
	}
}

package lbproxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/proxies/lbproxy"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// TestMetrics runs the proxy in front of two fake instances, the second
// failing every request, sends it requests, and checks that /metrics counts
// what was sent, as /_lbchaos/stats does: requests and errors per backend,
// nothing in flight, the failing backend ejected, a latency sample per
// request.
func TestMetrics(t *testing.T) {
	var backends []string
	for id, fault := range []faultyserver.Fault{nil, faultyserver.Fail{Status: 503}} {
		srv, err := faultyserver.New(faultyserver.Config{ID: id, Service: faultyserver.Fixed(time.Millisecond), Seed: 1, InitialFault: fault})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { hs.Close(); srv.Close() })
		backends = append(backends, hs.URL)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const strategy = "round-robin+eject(consecutive=3,duration=1m)"
	f := lbproxy.DefaultFlags
	f.Listen, f.Strategy, f.Backends = addr, strategy, backends
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lbproxy.Serve(ctx, f, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(base + lbproxy.ReadyPath); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy did not come up")
		}
	}

	var sent, failed [2]int
	for range 40 {
		resp, err := http.Get(base + "/work")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		id, err := strconv.Atoi(resp.Header.Get(transport.UpstreamHeader))
		if err != nil || id < 0 || id > 1 {
			t.Fatalf("%s: %q", transport.UpstreamHeader, resp.Header.Get(transport.UpstreamHeader))
		}
		sent[id]++
		if resp.StatusCode >= 500 {
			failed[id]++
		}
	}
	if failed[0] != 0 || sent[1] != failed[1] || sent[1] != 3 {
		t.Fatalf("sent %v, failed %v: want backend 1 to fail its 3 requests before its ejection, backend 0 none", sent, failed)
	}

	resp, err := http.Get(base + lbproxy.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s is not in the Prometheus text format: %v", lbproxy.MetricsPath, err)
	}
	resp, err = http.Get(base + "/_lbchaos/stats")
	if err != nil {
		t.Fatal(err)
	}
	var stats lbproxy.Stats
	err = json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}

	// value returns the value of the metric name with the label backend=id
	// (id < 0: without labels).
	value := func(name string, id int) float64 {
		t.Helper()
		mf := families[name]
		if mf == nil {
			t.Fatalf("no metric %s", name)
		}
		for _, m := range mf.Metric {
			if id < 0 || label(m, "backend") == strconv.Itoa(id) {
				if id >= 0 && label(m, "url") != backends[id] {
					t.Errorf("%s{backend=%d}: url %q, want %q", name, id, label(m, "url"), backends[id])
				}
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
		t.Fatalf("no %s for backend %d", name, id)
		return 0
	}
	for id := range 2 {
		ejected := 0.0
		if id == 1 {
			ejected = 1
		}
		for _, c := range []struct {
			name       string
			want, json float64
		}{
			{"lbchaos_proxy_requests_total", float64(sent[id]), float64(stats.Backends[id].Requests)},
			{"lbchaos_proxy_errors_total", float64(failed[id]), float64(stats.Backends[id].Errors)},
			{"lbchaos_proxy_in_flight", 0, float64(stats.Backends[id].InFlight)},
			{"lbchaos_proxy_ejected", ejected, map[bool]float64{true: 1}[stats.Backends[id].Ejected]},
			{"lbchaos_proxy_request_duration_seconds", float64(sent[id]), float64(stats.Backends[id].Requests)},
		} {
			if got := value(c.name, id); got != c.want || got != c.json {
				t.Errorf("%s{backend=%d} = %v, want %v (sent) and %v (/_lbchaos/stats)", c.name, id, got, c.want, c.json)
			}
		}
	}
	if got := value("lbchaos_proxy_ejections_total", -1); got != 1 || stats.Ejections != 1 {
		t.Errorf("ejections: %v in the metrics, %d in the stats; want 1", got, stats.Ejections)
	}
	if info := families["lbchaos_proxy_info"]; info == nil || len(info.Metric) != 1 || label(info.Metric[0], "strategy") != strategy {
		t.Errorf("lbchaos_proxy_info: %v, want the strategy %q", info, strategy)
	}
	if families["go_goroutines"] == nil || families["process_cpu_seconds_total"] == nil {
		t.Error("no Go runtime or process metrics")
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

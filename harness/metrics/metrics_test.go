package metrics_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/harness/metrics"
)

func TestBuckets(t *testing.T) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
		want    []float64
	}{
		{"30s", 30 * time.Second, []float64{
			0.001, 0.00125, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.008,
			0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.08,
			0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8,
			1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8,
			10, 12.5, 15, 20, 25, 30}},
		{"on a bound", 10 * time.Millisecond, []float64{0.001, 0.00125, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01}},
		{"between bounds", 7 * time.Millisecond, []float64{0.001, 0.00125, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.007}},
		{"below 1 ms", 500 * time.Microsecond, []float64{0.0005}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := metrics.Buckets(c.timeout)
			if diff := cmp.Diff(c.want, got, cmp.Comparer(func(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 })); diff != "" {
				t.Errorf("Buckets(%v) (-want +got):\n%s", c.timeout, diff)
			}
			if !slices.IsSorted(got) {
				t.Errorf("Buckets(%v) = %v, not ascending", c.timeout, got)
			}
		})
	}
}

// scrape reads url in the text format into one value per series, keyed
// name{label="value",...} with the labels sorted; a histogram gives its
// _count and _sum.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: not the text format: %v", url, err)
	}
	out := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.Metric {
			switch {
			case m.Counter != nil:
				out[key(name, m)] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key(name, m)] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key(name+"_count", m)] = float64(m.Histogram.GetSampleCount())
				out[key(name+"_sum", m)] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}

func key(name string, m *dto.Metric) string {
	var kv []string
	for _, l := range m.Label {
		kv = append(kv, l.GetName(), l.GetValue())
	}
	return series(name, kv...)
}

// series is the key of scrape's series name with the labels kv (name,
// value, name, value ...).
func series(name string, kv ...string) string {
	var ls []string
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// TestExporter counts two strategies' requests in turn, and checks each
// series: per instance and outcome, no instance as "none", the running
// strategy, and the gauges only while a strategy runs.
func TestExporter(t *testing.T) {
	x := metrics.NewExporter(time.Second)
	srv := httptest.NewServer(x.Handler())
	defer srv.Close()
	strategies := []string{"round-robin", "p2c"}
	inflight := int64(7)
	a := x.Begin(metrics.Run{Experiment: "e", Strategy: "round-robin", Strategies: strategies, Instances: 2},
		metrics.Live{InFlight: func() int64 { return inflight }, RateTarget: func() float64 { return 250 }})
	a.Add(0, metrics.OK, 10*time.Millisecond, 1)
	a.Add(0, metrics.OK, 20*time.Millisecond, 1)
	a.Add(1, metrics.Error, time.Millisecond, 3)
	a.Add(1, metrics.Timeout, time.Second, 1)
	a.Add(-1, metrics.Error, 0, 1)
	a.Add(5, metrics.Error, 0, 1) // out of range: no instance

	got := scrape(t, srv.URL)
	rr := func(name string, kv ...string) string {
		return series(name, append([]string{"experiment", "e", "strategy", "round-robin"}, kv...)...)
	}
	want := map[string]float64{
		rr("lbchaos_requests_total", "instance", "0", "outcome", "ok"):           2,
		rr("lbchaos_requests_total", "instance", "0", "outcome", "error"):        0,
		rr("lbchaos_requests_total", "instance", "1", "outcome", "error"):        3,
		rr("lbchaos_requests_total", "instance", "1", "outcome", "timeout"):      1,
		rr("lbchaos_requests_total", "instance", "none", "outcome", "error"):     2,
		rr("lbchaos_request_duration_seconds_count", "instance", "0"):            2,
		rr("lbchaos_request_duration_seconds_count", "instance", "1"):            4,
		rr("lbchaos_request_duration_seconds_sum", "instance", "1"):              1.003,
		rr("lbchaos_strategy_running"):                                           1,
		series("lbchaos_strategy_running", "experiment", "e", "strategy", "p2c"): 0,
		rr("lbchaos_inflight"):    7,
		rr("lbchaos_rate_target"): 250,
	}
	check(t, "round-robin running", got, want)

	a.End()
	b := x.Begin(metrics.Run{Experiment: "e", Strategy: "p2c", Strategies: strategies, Instances: 2}, metrics.Live{})
	b.Add(1, metrics.OK, time.Millisecond, 1)
	got = scrape(t, srv.URL)
	want = map[string]float64{
		rr("lbchaos_requests_total", "instance", "0", "outcome", "ok"):                                           2,
		series("lbchaos_requests_total", "experiment", "e", "strategy", "p2c", "instance", "1", "outcome", "ok"): 1,
		rr("lbchaos_strategy_running"):                                           0,
		series("lbchaos_strategy_running", "experiment", "e", "strategy", "p2c"): 1,
	}
	check(t, "p2c running", got, want)
	for k := range got {
		if strings.HasPrefix(k, "lbchaos_inflight") || strings.HasPrefix(k, "lbchaos_rate_target") {
			t.Errorf("%s exported for a strategy without live gauges, or one over", k)
		}
	}
	b.End()
	if got := scrape(t, srv.URL)[series("lbchaos_strategy_running", "experiment", "e", "strategy", "p2c")]; got != 0 {
		t.Errorf("p2c running after End: %v", got)
	}
}

// check reports every series of want whose value in got differs, or is
// missing.
func check(t *testing.T, when string, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: no %s", when, k)
		case g != w && (g-w > 1e-9 || w-g > 1e-9):
			t.Errorf("%s: %s = %v, want %v", when, k, g, w)
		}
	}
}

// TestServer serves the metrics on a free port, then checks that Close
// leaves neither the port bound nor a goroutine behind.
func TestServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	x := metrics.NewExporter(time.Second)
	x.Begin(metrics.Run{Experiment: "e", Strategy: "s", Instances: 1}, metrics.Live{}).Add(0, metrics.OK, time.Millisecond, 1)
	srv, err := metrics.Listen("127.0.0.1:0", x)
	if err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, srv.URL())[series("lbchaos_requests_total", "experiment", "e", "strategy", "s", "instance", "0", "outcome", "ok")]; got != 1 {
		t.Errorf("requests: %v, want 1", got)
	}
	if resp, err := http.Get("http://" + srv.Addr() + "/other"); err != nil {
		t.Error(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %s, want 404", resp.Status)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", srv.Addr()); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", srv.Addr())
	}
}

func TestListenBadAddress(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:99999", "no-such-host.invalid:1", "127.0.0.1"} {
		if srv, err := metrics.Listen(addr, metrics.NewExporter(time.Second)); err == nil {
			srv.Close()
			t.Errorf("Listen(%q): no error", addr)
		}
	}
}

// BenchmarkAdd is the cost of counting one request, spread over the
// instances from parallel goroutines.
func BenchmarkAdd(b *testing.B) {
	x := metrics.NewExporter(30 * time.Second)
	s := x.Begin(metrics.Run{Experiment: "e", Strategy: "s", Instances: 10}, metrics.Live{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Add(i%10, metrics.OK, 12*time.Millisecond, 1)
			i++
		}
	})
}

// TestBucketBounds checks that a latency on a bound counts in that
// bucket (le is inclusive), one just past it in the next, and one past
// the timeout only in +Inf.
func TestBucketBounds(t *testing.T) {
	x := metrics.NewExporter(time.Second)
	s := x.Begin(metrics.Run{Experiment: "e", Strategy: "s", Instances: 1}, metrics.Live{})
	s.Add(0, metrics.OK, 10*time.Millisecond, 1)
	s.Add(0, metrics.OK, 10*time.Millisecond+time.Nanosecond, 2)
	s.Add(0, metrics.Timeout, time.Second+time.Millisecond, 1)
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metrics.Path, nil))
	lines := strings.Split(rec.Body.String(), "\n")
	for _, want := range []string{
		`lbchaos_request_duration_seconds_bucket{experiment="e",instance="0",strategy="s",le="0.008"} 0`,
		`lbchaos_request_duration_seconds_bucket{experiment="e",instance="0",strategy="s",le="0.01"} 1`,
		`lbchaos_request_duration_seconds_bucket{experiment="e",instance="0",strategy="s",le="0.0125"} 3`,
		`lbchaos_request_duration_seconds_bucket{experiment="e",instance="0",strategy="s",le="1"} 3`,
		`lbchaos_request_duration_seconds_bucket{experiment="e",instance="0",strategy="s",le="+Inf"} 4`,
		`lbchaos_request_duration_seconds_count{experiment="e",instance="0",strategy="s"} 4`,
		`lbchaos_requests_total{experiment="e",instance="0",outcome="ok",strategy="s"} 3`,
		`lbchaos_requests_total{experiment="e",instance="0",outcome="timeout",strategy="s"} 1`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %s in\n%s", want, rec.Body.String())
		}
	}
}

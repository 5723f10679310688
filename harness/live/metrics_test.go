package live

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/metrics"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// routedLoad is a load whose every result was routed: Take answers
// routes[seq % len(routes)]. Only what the result loop asks is
// implemented.
type routedLoad struct {
	load
	routes []*transport.Route
}

func (l routedLoad) Take(seq uint64) (*transport.Route, bool) {
	return l.routes[seq%uint64(len(l.routes))], true
}
func (routedLoad) InFlight() int64 { return 0 }
func (routedLoad) Abort()          {}
func (routedLoad) Stop() bool      { return true }

// BenchmarkResultMetrics is the result loop's cost per result without
// live metrics (baseline) and with them (metrics: every outcome counted
// and timed per instance, as --metrics-listen does); one op is one result
// read from the attack's channel, classified and collected. The results
// cycle over 10 instances and 10 seconds of the attack, 1% of them
// failed and 0.1% timed out.
func BenchmarkResultMetrics(b *testing.B) {
	const (
		instances = 10
		ring      = 1 << 14
		duration  = 10 * time.Second
	)
	exp := &experiments.Experiment{Name: "bench", Strategies: []string{"round-robin"}, Duration: duration, Timeout: time.Second, SlowThreshold: time.Second}
	start := time.Now()
	sched := &engine.ConstantSchedule{PerSecond: ring / duration.Seconds()}
	// Shared by every op and only read: the loop writes a result's
	// BytesIn only when it is 0.
	results := make([]*vegeta.Result, ring)
	routes := make([]*transport.Route, ring)
	for i := range ring {
		due, _ := sched.Due(uint64(i))
		res := &vegeta.Result{Seq: uint64(i), Code: 200, Timestamp: start.Add(due + 50*time.Microsecond), Latency: time.Duration(5+i%20) * time.Millisecond, BytesIn: 2}
		rt := &transport.Route{Instance: i % instances}
		switch {
		case i%1000 == 999:
			res.Code, res.Error, res.Latency = 0, "timeout", exp.Timeout
			rt.Timeout.Store(true)
		case i%100 == 99:
			res.Code = 503
		}
		results[i], routes[i] = res, rt
	}
	for _, c := range []struct {
		name    string
		metrics bool
	}{{"baseline", false}, {"metrics", true}} {
		b.Run(c.name, func(b *testing.B) {
			ld := routedLoad{routes: routes}
			coll := engine.NewCollector(instances, duration, exp.Timeout, exp.SlowThreshold)
			a := &attack{job: engine.Job{Exp: exp, Log: io.Discard}, load: ld, coll: coll, sched: sched}
			if c.metrics {
				e := &Engine{opts: Options{Metrics: metrics.NewExporter(exp.Timeout)}}
				defer e.exportMetrics(a, instances)()
			}
			loop := resultLoop{job: a.job, every: time.Hour, start: start, sched: sched, load: ld, coll: coll}
			ch := make(chan *vegeta.Result, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			go func() {
				for i := range b.N {
					ch <- results[i%ring]
				}
				close(ch)
			}()
			out := loop.run(context.Background(), ch)
			b.StopTimer()
			if out.sent != int64(b.N) {
				b.Fatalf("the loop read %d results of %d", out.sent, b.N)
			}
		})
	}
}

// TestExportMetrics checks that every outcome the collector records
// reaches the exporter, attributed and classified as the summary counts
// it, and that the strategy is over once the returned func is called.
func TestExportMetrics(t *testing.T) {
	exp := &experiments.Experiment{Name: "x", Strategies: []string{"p2c"}, Duration: time.Second, Timeout: time.Second, SlowThreshold: time.Second}
	x := metrics.NewExporter(exp.Timeout)
	coll := engine.NewCollector(2, exp.Duration, exp.Timeout, exp.SlowThreshold)
	a := &attack{job: engine.Job{Exp: exp, Log: io.Discard}, load: routedLoad{}, coll: coll, sched: &engine.ConstantSchedule{PerSecond: 100}}
	end := (&Engine{opts: Options{Metrics: x}}).exportMetrics(a, 2)
	coll.Add(engine.Outcome{Instance: 0, Success: true, Latency: time.Millisecond})
	coll.Add(engine.Outcome{Instance: 1, Latency: time.Millisecond})
	coll.Add(engine.Outcome{Instance: 1, Timeout: true, Latency: time.Second})
	coll.Add(engine.Outcome{Instance: -1})
	running := scrapeText(t, x)
	end()
	over := scrapeText(t, x)
	for _, want := range []string{
		`lbchaos_requests_total{experiment="x",instance="0",outcome="ok",strategy="p2c"} 1`,
		`lbchaos_requests_total{experiment="x",instance="1",outcome="error",strategy="p2c"} 1`,
		`lbchaos_requests_total{experiment="x",instance="1",outcome="timeout",strategy="p2c"} 1`,
		`lbchaos_requests_total{experiment="x",instance="none",outcome="error",strategy="p2c"} 1`,
		`lbchaos_request_duration_seconds_count{experiment="x",instance="1",strategy="p2c"} 2`,
		`lbchaos_strategy_running{experiment="x",strategy="p2c"} 1`,
		`lbchaos_inflight{experiment="x",strategy="p2c"} 0`,
		`lbchaos_rate_target{experiment="x",strategy="p2c"} 0`, // not armed
	} {
		if !slices.Contains(running, want) {
			t.Errorf("running: no line %s in\n%s", want, strings.Join(running, "\n"))
		}
	}
	if want := `lbchaos_strategy_running{experiment="x",strategy="p2c"} 0`; !slices.Contains(over, want) {
		t.Errorf("over: no line %s in\n%s", want, strings.Join(over, "\n"))
	}
}

// scrapeText returns the lines of x's metrics in the text format.
func scrapeText(t *testing.T, x *metrics.Exporter) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metrics.Path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d", metrics.Path, rec.Code)
	}
	return strings.Split(rec.Body.String(), "\n")
}

// TestRunMetricsMatchSummary runs two strategies for real against an
// instance that hangs for a while (timeouts) and one that fails (503s),
// and checks that once the run is over the exported counters are the
// summary's, instance by instance: every request attributed, timeouts and
// errors apart, none left without an instance, no strategy running.
func TestRunMetricsMatchSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "metrics", `
duration: 2s
rate: 300
timeout: 200ms
instances: {count: 3, workers: 0, service: {dist: fixed, value: 2ms}}
faults:
  - {instance: 1, at: 500ms, until: 1500ms, fault: {mode: hang}}
  - {instance: 2, at: 0s, fault: {mode: fail, status: 503}}
strategies: [round-robin, p2c]
`)
	x := metrics.NewExporter(exp.Timeout)
	sum, err := run(context.Background(), exp, Options{Metrics: x})
	if err != nil {
		t.Fatal(err)
	}
	got := map[[3]string]float64{}
	for _, line := range scrapeText(t, x) {
		var st, in, out string
		var v float64
		if _, err := fmt.Sscanf(strings.NewReplacer(",", " ", "{", " ", "}", " ", `"`, " ", "=", " ").Replace(line),
			"lbchaos_requests_total experiment metrics instance %s outcome %s strategy %s %g", &in, &out, &st, &v); err == nil {
			got[[3]string{st, in, out}] = v
		}
		if strings.HasPrefix(line, "lbchaos_strategy_running{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("after the run: %s", line)
		}
	}
	for _, st := range sum.Strategies {
		for _, in := range st.Instances {
			id := strconv.Itoa(in.ID)
			want := map[string]float64{"ok": float64(in.Requests - in.Errors), "error": float64(in.Errors - in.Timeouts), "timeout": float64(in.Timeouts)}
			for out, w := range want {
				if g := got[[3]string{st.Name, id, out}]; g != w {
					t.Errorf("%s instance %d: %s %v, the summary's %v", st.Name, in.ID, out, g, w)
				}
			}
		}
		if st.Instances[1].Timeouts == 0 || st.Instances[2].Errors == 0 {
			t.Errorf("%s: %d timeouts on instance 1, %d errors on instance 2; want some of each", st.Name, st.Instances[1].Timeouts, st.Instances[2].Errors)
		}
		for k, v := range got {
			if k[0] == st.Name && k[1] == metrics.NoInstance {
				t.Errorf("%s: %v requests counted without an instance (%s)", st.Name, v, k[2])
			}
		}
	}
}

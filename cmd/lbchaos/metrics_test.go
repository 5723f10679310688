package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/harness/metrics"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape is one reading of /metrics: each strategy's running gauge and
// its requests per instance (every outcome) and in all.
type scrape struct {
	running  map[string]float64
	requests map[string]map[string]float64 // strategy -> instance -> requests
	latency  map[string]map[string]uint64  // strategy -> instance -> histogram count
}

func (s scrape) total(strategy string) float64 {
	var n float64
	for _, v := range s.requests[strategy] {
		n += v
	}
	return n
}

// scrapeMetrics reads url in the text format; ok is false when it does
// not answer.
func scrapeMetrics(t *testing.T, url string) (scrape, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return scrape{}, false
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
	s := scrape{running: map[string]float64{}, requests: map[string]map[string]float64{}, latency: map[string]map[string]uint64{}}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.Label {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		t.Fatalf("a series without label %s: %v", name, m)
		return ""
	}
	for _, m := range families[metrics.StrategyRunningName].GetMetric() {
		s.running[label(m, "strategy")] = m.GetGauge().GetValue()
	}
	for _, m := range families[metrics.RequestsName].GetMetric() {
		st := label(m, "strategy")
		if s.requests[st] == nil {
			s.requests[st] = map[string]float64{}
		}
		s.requests[st][label(m, "instance")] += m.GetCounter().GetValue()
		if e := label(m, "experiment"); e != "fast-fail" {
			t.Errorf("experiment label %q, want fast-fail", e)
		}
	}
	for _, m := range families[metrics.DurationName].GetMetric() {
		st := label(m, "strategy")
		if s.latency[st] == nil {
			s.latency[st] = map[string]uint64{}
		}
		s.latency[st][label(m, "instance")] = m.GetHistogram().GetSampleCount()
	}
	return s, true
}

// TestRunServesMetrics runs two strategies for real, in-process, with
// --metrics-listen, scrapes /metrics over HTTP while each runs and checks
// that the running strategy's requests grow on every instance, and that
// nothing listens once the run is over.
func TestRunServesMetrics(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	addr := freeAddr(t)
	url := "http://" + addr + metrics.Path
	const instances = 10 // fast-fail's
	done := make(chan error, 1)
	go func() {
		_, stderr, err := runCLI(t, context.Background(), "run", "fast-fail", "--duration", "3s", "--rate", "300",
			"--strategies", "round-robin,p2c", "--backends", "process", "--raw=false", "--quiet",
			"--out", t.TempDir(), "--metrics-listen", addr)
		if err != nil {
			err = &exitError{exitCode(err), errorsWithOutput{err, stderr}}
		}
		done <- err
	}()

	// waitRunning scrapes until strategy runs with requests counted.
	waitRunning := func(strategy string) scrape {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("the run ended before %s was seen running: %v", strategy, err)
			default:
			}
			if s, ok := scrapeMetrics(t, url); ok && s.running[strategy] == 1 && s.total(strategy) > 0 {
				return s
			}
		}
		t.Fatalf("%s never seen running with requests counted", strategy)
		return scrape{}
	}
	compared := 0
	for _, strategy := range []string{"round-robin", "p2c"} {
		first := waitRunning(strategy)
		time.Sleep(time.Second)
		second, ok := scrapeMetrics(t, url)
		if !ok {
			t.Fatalf("%s: /metrics stopped answering mid-run", strategy)
		}
		if second.running[strategy] != 1 {
			// It ended between the scrapes: its last requests may have
			// come before the second.
			t.Logf("%s ended within a second of its first scrape; not compared", strategy)
			continue
		}
		compared++
		for other, v := range second.running {
			if other != strategy && v != 0 {
				t.Errorf("while %s runs: %s{strategy=%q} = %v, want 0", strategy, metrics.StrategyRunningName, other, v)
			}
		}
		if len(second.requests[strategy]) < instances {
			t.Errorf("%s: requests of %d instances, want %d: %v", strategy, len(second.requests[strategy]), instances, second.requests[strategy])
		}
		for id, n := range second.requests[strategy] {
			if id == metrics.NoInstance {
				t.Errorf("%s: %v requests reached no instance", strategy, n)
				continue
			}
			if n <= first.requests[strategy][id] {
				t.Errorf("%s: instance %s's requests did not grow in a second: %v, then %v", strategy, id, first.requests[strategy][id], n)
			}
			if c := second.latency[strategy][id]; c == 0 {
				t.Errorf("%s: instance %s: no latency counted for %v requests", strategy, id, n)
			}
		}
		if strategy == "p2c" && second.total("round-robin") < first.total("round-robin") {
			t.Errorf("round-robin's requests went back: %v, then %v", first.total("round-robin"), second.total("round-robin"))
		}
	}
	if compared == 0 {
		t.Error("no strategy was scraped twice while it ran")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the run", addr)
	}
	http.DefaultClient.CloseIdleConnections()
}

// errorsWithOutput is a run's error with its stderr, for the test's log.
type errorsWithOutput struct {
	err    error
	stderr string
}

func (e errorsWithOutput) Error() string { return e.err.Error() + "\n" + e.stderr }
func (e errorsWithOutput) Unwrap() error { return e.err }

// TestRunMetricsListenRefused checks that a --metrics-listen the run
// cannot serve is a usage error naming the flag, before anything runs.
func TestRunMetricsListenRefused(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"bad port", []string{"--metrics-listen", "127.0.0.1:99999"}, "--metrics-listen 127.0.0.1:99999: "},
		{"no port", []string{"--metrics-listen", "127.0.0.1"}, "--metrics-listen 127.0.0.1: "},
		{"in use", []string{"--metrics-listen", busy.Addr().String()}, "--metrics-listen " + busy.Addr().String() + ": "},
		{"empty", []string{"--metrics-listen", ""}, "--metrics-listen: give the address"},
		{"sim", []string{"--engine", "sim", "--metrics-listen", "127.0.0.1:0"}, "--metrics-listen: a simulation (--engine sim) runs in virtual time"},
		{"generators", []string{"--generators", "2", "--metrics-listen", "127.0.0.1:0"}, "--metrics-listen: a run spread over 2 generators"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"run", "baseline", "--backends", "process", "--duration", "1s", "--out", out}, c.args...)
			if c.name == "sim" {
				args = append([]string{"run", "baseline", "--duration", "1s", "--out", out}, c.args...)
			}
			_, _, err := runCLI(t, context.Background(), args...)
			if code := exitCode(err); code != 2 || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("exit %d, %v; want exit 2 and %q", code, err, c.want)
			}
		})
	}
}

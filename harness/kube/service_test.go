package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/reports"
)

// TestClusterService runs load through a real Service: generator pods send
// to its ClusterIP, kube-proxy's rules pick a ready pod per connection,
// and every answer names its pod. A fast-failing pod whose readiness probe
// passes gets its tenth and stays in rotation; a killed pod leaves it
// within the probe's bound.
func TestClusterService(t *testing.T) {
	p := newClusterProvider(t, Options{Service: true, ServiceRules: localcluster.ServiceRules})
	e := live.New(live.Options{Provider: p, Launcher: p.Launcher(5 * time.Second)})
	run := func(exp string) *reports.Summary {
		x := runtest.MustExperiment(t, "kube-service", exp)
		sum, err := harness.Run(t.Context(), x, harness.Options{Engine: e, Log: testLog{t}})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sum.Strategies {
			runtest.CheckAccounting(t, st)
			t.Logf("%s: requests %d, error ratio %.4f, faulty share %.4f, unattributed %d, p99 %.1f ms", st.Name, st.Requests, st.ErrorRatio, st.FaultyShare, st.Unattributed, st.LatencyMs.P99)
		}
		for _, n := range sum.Notes {
			t.Logf("note: %s", n)
		}
		return sum
	}

	sum := run(`
duration: 4s
rate: 300
timeout: 2s
keepalive: false
instances:
  count: 10
  workers: 8
  service: {dist: fixed, value: 5ms}
  readiness: {period: 1s, failure_threshold: 3}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies: [kube:service]
`)
	st := sum.Strategies[0]
	if st.FaultyShare < 0.07 || st.FaultyShare > 0.13 {
		t.Errorf("kube:service: faulty share %.4f, want about a tenth (kube-proxy's random choice per connection)", st.FaultyShare)
	}
	if got := st.Instances[0].ErrorRatio; got < 0.99 {
		t.Errorf("the failing pod's error ratio %.3f, want 1", got)
	}
	for _, ev := range st.Events {
		if ev.Instance == 0 && (ev.Kind == "not-ready" || ev.Kind == "endpoint-out") {
			t.Errorf("the failing pod left rotation (%s at %.1f s): its probe's path is healthy", ev.Kind, ev.TimeS)
		}
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "connections to the Service") {
		t.Errorf("no note counts the connections to the Service")
	}

	sum = run(`
duration: 8s
rate: 300
timeout: 2s
instances:
  count: 5
  workers: 8
  service: {dist: fixed, value: 5ms}
  readiness: {period: 1s, failure_threshold: 3}
faults:
  - {instance: 0, at: 2s, fault: {mode: kill}}
strategies: [kube:service]
`)
	st = sum.Strategies[0]
	if len(st.Rotation) != 1 {
		t.Fatalf("rotation %+v, want one row for the killed pod", st.Rotation)
	}
	r := st.Rotation[0]
	t.Logf("killed at %.1f s: not ready %v, endpoint out %v, no traffic %v", r.FaultS, deref(r.NotReadyS), deref(r.EndpointOutS), deref(r.NoTrafficS))
	// The probe's bound: period × failure threshold, and 5 s more.
	if r.EndpointOutS == nil || *r.EndpointOutS > 1*3+5 {
		t.Errorf("the killed pod left the EndpointSlice after %v s, want within %d s", deref(r.EndpointOutS), 1*3+5)
	}
	if r.NoTrafficS == nil || *r.NoTrafficS > 1*3+5 {
		t.Errorf("the Service sent the killed pod traffic until %v s after the kill, want within %d s", deref(r.NoTrafficS), 1*3+5)
	}
}

func deref(v *float64) any {
	if v == nil {
		return "never"
	}
	return *v
}

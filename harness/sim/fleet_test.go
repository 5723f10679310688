package sim

import (
	"strconv"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

func TestSimJoiningInstanceWithWarmup(t *testing.T) {
	// Two instances from the start, a third joins at 100 ms and serves 5x
	// slower (50 ms) for 100 ms. Round robin over the host set.
	exp := runtest.MustExperiment(t, "join", `
duration: 300ms
arrival: constant
rate: 100
instances:
  workers: 0
  service: {dist: fixed, value: 10ms}
  groups:
    - {count: 2}
    - {join_at: 100ms, warmup: {duration: 100ms, factor: 5}}
strategies: [round-robin]
`)
	st, rs := traceSim(t, exp, "round-robin")
	var before, warm, after int
	for _, r := range rs {
		if r.Instance != 2 {
			continue
		}
		switch {
		case r.SentAt < 100*time.Millisecond:
			before++
		case r.SentAt < 200*time.Millisecond:
			warm++
			if r.Latency != 50*time.Millisecond {
				t.Errorf("request sent at %v during warm-up took %v, want 50ms", r.SentAt, r.Latency)
			}
		default:
			after++
			if r.Latency != 10*time.Millisecond {
				t.Errorf("request sent at %v after warm-up took %v, want 10ms", r.SentAt, r.Latency)
			}
		}
	}
	if before != 0 || warm == 0 || after == 0 {
		t.Errorf("instance 2 got %d requests before joining, %d in warm-up, %d after; want 0, >0, >0", before, warm, after)
	}
	var joins int
	for _, e := range st.Events {
		if e.Kind == "join" {
			joins++
			if e.Instance != 2 || e.TimeS != 0.1 {
				t.Errorf("join event %+v, want instance 2 at 0.1 s", e)
			}
		}
		if e.Kind == "leave" {
			t.Errorf("leave event %+v: the initial host set is not a change", e)
		}
	}
	if joins != 1 {
		t.Errorf("%d join events, want 1", joins)
	}
}

func TestSimReplicasSplitTheLoad(t *testing.T) {
	// Two round-robin replicas over three instances: request k goes to
	// replica k mod 2, whose own cycle starts at instance 0. So requests
	// 0, 2, 4 go to 0, 1, 2 and requests 1, 3, 5 too.
	exp := runtest.MustExperiment(t, "replicas", `
duration: 60ms
arrival: constant
rate: 100
replicas: 2
instances: {count: 3, workers: 0, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`)
	_, rs := traceSim(t, exp, "round-robin")
	want := []int{0, 0, 1, 1, 2, 2}
	if len(rs) != len(want) {
		t.Fatalf("%d requests, want %d", len(rs), len(want))
	}
	for k, r := range rs {
		if r.Instance != want[k] {
			t.Errorf("request %d went to %d, want %d", k, r.Instance, want[k])
		}
	}
}

func TestSimKeysAndReportedLoad(t *testing.T) {
	// key-hash over keys k mod 4 on 2 instances: key k goes to k mod 2.
	// One worker of 30 ms with arrivals every 10 ms: a queue builds, and
	// each answer reports the requests left behind it.
	exp := runtest.MustExperiment(t, "keys", `
duration: 100ms
arrival: constant
rate: 100
instances: {count: 2, workers: 1, service: {dist: fixed, value: 30ms}}
keys: {dist: sequence, n: 4}
strategies: [key-hash]
`)
	st, rs := traceSim(t, exp, "key-hash")
	for k, r := range rs {
		if !r.HasKey || r.Key != uint64(k%4) || r.Instance != k%2 {
			t.Errorf("request %d: key %d (has %v) to instance %d; want key %d to instance %d", k, r.Key, r.HasKey, r.Instance, k%4, k%2)
		}
		if !r.so.HasLoad {
			t.Errorf("request %d: the answer carries no load", k)
		}
	}
	// Instance 0 gets a request every 20 ms and serves each in 30 ms: as
	// the first answers at 30 ms, the one sent at 20 ms holds the worker.
	if got := rs[0].so.Load; got != 1 {
		t.Errorf("first answer reports load %v, want 1 (one request queued behind it)", got)
	}
	if st.Affinity == nil || *st.Affinity != 1 {
		t.Errorf("affinity %v, want 1: every key always goes to one instance", st.Affinity)
	}
}

func TestSimUtilization(t *testing.T) {
	// One worker, 10 ms per request, a request every 20 ms: busy half the time.
	exp := runtest.MustExperiment(t, "util", `
duration: 1s
arrival: constant
rate: 50
instances: {count: 1, workers: 1, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`)
	st, _ := traceSim(t, exp, "round-robin")
	u := st.Instances[0].Utilization
	// The last request ends 10 ms after the 1 s attack: 0.5 s busy of 1 s.
	if u == nil || *u < 0.49 || *u > 0.5 {
		t.Errorf("utilization %v, want about 0.5", u)
	}
	unlimited := runtest.MustExperiment(t, "util", `
duration: 100ms
rate: 50
instances: {count: 1, workers: 0, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`)
	if st, _ := traceSim(t, unlimited, "round-robin"); st.Instances[0].Utilization != nil {
		t.Errorf("an instance without a worker limit has utilization %v", *st.Instances[0].Utilization)
	}
}

func TestProbeHealthy(t *testing.T) {
	tests := []struct {
		name  string
		fault faultyserver.Fault
		want  bool
	}{
		{"no fault", nil, true},
		{"slow, health check passes", faultyserver.Slow{Factor: 10}, true},
		{"fail, health check passes", faultyserver.Fail{Status: 503}, true},
		{"hang with a failing health check", faultyserver.Hang{Health: faultyserver.Health{Status: 503}}, false},
		{"paused container", faultyserver.Pause{}, false},
		{"killed container", faultyserver.Kill{}, false},
		{"throttled container", faultyserver.CPU{CPUs: 0.1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := faultyserver.ProbeHealthy(tt.fault); got != tt.want {
				t.Errorf("probeHealthy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJoinSteps(t *testing.T) {
	exp := runtest.MustExperiment(t, "steps", `
duration: 10s
rate: 10
instances:
  service: {dist: fixed, value: 1ms}
  groups:
    - {count: 2}
    - {join_at: 5s}
    - {join_at: 2s}
    - {join_at: 5s}
strategies: [round-robin]
`)
	at, hosts := engine.JoinSteps(exp)
	if len(at) != 2 || at[0] != 2*time.Second || at[1] != 5*time.Second {
		t.Fatalf("join times %v, want [2s 5s]", at)
	}
	if got := hosts[0]; len(got) != 3 || got[2] != 3 {
		t.Errorf("host set at 2s %v, want [0 1 3]", got)
	}
	if got := hosts[1]; len(got) != 5 {
		t.Errorf("host set at 5s %v, want all five", got)
	}
}

func TestSimActiveHealthChecks(t *testing.T) {
	// Instance 0 fails every request; in the first case its health check
	// fails too, in the second it keeps answering 200, as the fast-fail
	// scenario's instance does.
	for _, tt := range []struct {
		name     string
		health   int
		wantDown bool
	}{
		{"failing health check", 503, true},
		{"passing health check", 200, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "probes", `
duration: 2s
arrival: constant
rate: 300
instances: {count: 3, workers: 0, service: {dist: fixed, value: 1ms}}
faults:
  - instance: 0
    at: 0s
    fault: {mode: fail, status: 503, health_status: `+strconv.Itoa(tt.health)+`}
strategies: ["round-robin+healthcheck(interval=100ms,timeout=50ms,rise=2,fall=2)"]
`)
			st, rs := traceSim(t, exp, exp.Strategies[0])
			var late int
			for _, r := range rs {
				// Two failed probes, at 100 ms and 200 ms, mark it down.
				if r.Instance == 0 && r.SentAt >= 200*time.Millisecond {
					late++
				}
			}
			var downs int
			for _, e := range st.Events {
				if e.Kind == "probe" && e.Detail == "down" {
					downs++
					if e.Instance != 0 || e.TimeS != 0.2 {
						t.Errorf("event %+v, want instance 0 down at 0.2 s", e)
					}
				}
			}
			if tt.wantDown && (late != 0 || downs != 1) {
				t.Errorf("instance 0 got %d requests after it failed two probes (%d down events); want 0 and 1", late, downs)
			}
			if !tt.wantDown && (late == 0 || downs != 0) {
				t.Errorf("instance 0 got %d requests after 200 ms with %d down events; a passing health check keeps it in", late, downs)
			}
		})
	}
}

func TestSimKeysFromRequests(t *testing.T) {
	// The simulator sends no requests but draws their keys as the real
	// engine chooses them: a weighted list with a path pattern, where
	// /health carries no key.
	exp := runtest.MustExperiment(t, "request-keys", `
duration: 1s
arrival: constant
rate: 200
instances: {count: 3, workers: 0, service: {dist: fixed, value: 1ms}}
requests:
  key: {path: "/users/{key}/"}
  list:
    - {path: /users/1/cart, weight: 2}
    - {path: /users/2/cart, weight: 1}
    - {path: /health, weight: 1}
strategies: [key-hash]
`)
	st, rs := traceSim(t, exp, "key-hash")
	pick := engine.NewRequestPicker(exp.Requests, exp.Seed)
	home := map[uint64]int{}
	for k, r := range rs {
		want := exp.Requests.List[pick.Pick(uint64(k))]
		if r.Key != want.Key || r.HasKey != want.HasKey {
			t.Fatalf("request %d: key %d (has %v), want %d (has %v) of %s", k, r.Key, r.HasKey, want.Key, want.HasKey, want.Path)
		}
		if !r.HasKey {
			continue
		}
		if h, ok := home[r.Key]; ok && h != r.Instance {
			t.Errorf("key %d went to instances %d and %d", r.Key, h, r.Instance)
		}
		home[r.Key] = r.Instance
	}
	if len(home) != 2 || st.Affinity == nil || *st.Affinity != 1 {
		t.Errorf("keys %v, affinity %v; want keys 1 and 2, each on one instance", home, st.Affinity)
	}
}

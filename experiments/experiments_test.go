package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/faultyserver"
)

func TestShippedExperimentsLoad(t *testing.T) {
	want := []string{"all-failing", "app-fast-fail", "app-slow-instance", "baseline", "blackhole-instance", "burst", "cold-start", "crash", "error-rate", "fast-fail", "fastest-response-trap", "freeze", "grpc-fast-fail", "grpc-slow-instance", "hedge-slow-instance", "herd",
		"hetero-hardware", "heterogeneous", "hot-key", "ip-hash-pool", "latency-spike", "long-connections", "lossy-instance", "noisy-neighbor", "retry-amplification", "retry-fast-fail", "retry-post", "retry-storm", "rolling-restart", "rolling-restart-graceful", "service-fast-fail", "service-pod-kill", "slow-instance", "truncated-bodies", "zone-imbalance", "zone-jitter", "zone-outage"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Fatalf("Names() mismatch (-want +got):\n%s", diff)
	}
	for _, name := range Names() {
		e, err := Load(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e.Description == "" || strings.Contains(e.Description, "\n") {
			t.Errorf("%s: description must be one line, got %q", name, e.Description)
		}
	}
}

// The published settings of ../shared/scenarios.md, checked field by field.
func TestShippedSettings(t *testing.T) {
	common := func(e *Experiment) {
		t.Helper()
		if e.Instances.Count != 10 || e.Instances.Workers != 8 || e.Instances.Service.Kind != "fixed" ||
			time.Duration(e.Instances.Service.Value) != 10*time.Millisecond {
			t.Errorf("%s: fleet %+v, want 10 instances x 8 workers, fixed 10ms", e.Name, e.Instances)
		}
		if e.Arrival != ArrivalPoisson || e.Rate != 4000 || e.Duration != 30*time.Second {
			t.Errorf("%s: %s %v req/s for %v, want poisson 4000 req/s for 30s", e.Name, e.Arrival, e.Rate, e.Duration)
		}
	}
	tests := []struct {
		name       string
		strategies []string
		faults     string
		timeout    time.Duration
		slow       time.Duration
	}{
		{"baseline", []string{"round-robin", "random", "least-inflight", "p2c"}, "", 30 * time.Second, time.Second},
		{"slow-instance", []string{"round-robin", "random", "least-inflight", "p2c", "least-inflight+eject(consecutive=5,duration=5s)",
			"round-robin+circuit(max_inflight=16,duration=5s)",
			"nginx:round_robin", "nginx:least_conn", "nginx:random_two", "haproxy:roundrobin", "haproxy:leastconn", "haproxy:random(2)",
			"caddy:least_conn", "caddy:round_robin(fail_duration=5s,max_fails=20,unhealthy_latency=75ms)"},
			"0@0s:slow", 30 * time.Second, time.Second},
		{"fast-fail", []string{"round-robin", "random", "least-inflight", "p2c",
			"least-inflight+eject(consecutive=5,duration=5s,max_duration=5s)", "least-inflight+eject(consecutive=5,duration=5s)",
			"nginx:round_robin", "nginx:least_conn", "nginx:least_conn(next_upstream=error|timeout|http_503)", "haproxy:leastconn",
			"haproxy:random(2)+observe(error_limit=10,on_error=mark-down)"},
			"0@0s:fail", 30 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Load(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			common(e)
			if diff := cmp.Diff(tt.strategies, e.Strategies); diff != "" {
				t.Errorf("strategies (-want +got):\n%s", diff)
			}
			var faults []string
			for _, f := range e.Faults {
				if f.Until != 0 {
					t.Errorf("fault on instance %d ends at %v; it must last the whole run", f.Instance, f.Until)
				}
				faults = append(faults, strings.Join([]string{string(rune('0' + f.Instance)), "@", f.At.String(), ":", f.Spec.Mode()}, ""))
			}
			if got := strings.Join(faults, ","); got != tt.faults {
				t.Errorf("faults %q, want %q", got, tt.faults)
			}
			if e.Timeout != tt.timeout || e.SlowThreshold != tt.slow {
				t.Errorf("timeout %v slow %v", e.Timeout, e.SlowThreshold)
			}
		})
	}
}

const good = `
name: t
duration: 10s
rate: 100
instances: {count: 3, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`

func TestDefaults(t *testing.T) {
	e, err := Parse("t.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if e.Seed != DefaultSeed || e.Arrival != DefaultArrival || e.Timeout != DefaultTimeout ||
		e.SlowThreshold != DefaultSlowThreshold || e.Instances.Workers != DefaultWorkers {
		t.Errorf("defaults not applied: %+v", e)
	}
}

func TestWorkersZeroMeansUnlimited(t *testing.T) {
	e, err := Parse("t.yaml", []byte(strings.Replace(good, "count: 3,", "count: 3, workers: 0,", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if e.Instances.Workers != 0 {
		t.Errorf("workers = %d, want 0 (unlimited)", e.Instances.Workers)
	}
}

func TestBadFiles(t *testing.T) {
	tests := []struct {
		name    string
		replace [2]string // applied to good
		add     string    // appended to good
		want    string    // substring of the error
	}{
		{name: "unknown key", add: "colour: blue\n", want: `t.yaml: line 7: unknown field "colour"`},
		{name: "unknown strategy", replace: [2]string{"[round-robin]", "[round-robin, fastest]"}, want: "t.yaml: strategies[1]: "},
		{name: "rate zero", replace: [2]string{"rate: 100", "rate: 0"}, want: "t.yaml: rate: must be > 0"},
		{name: "rate negative", replace: [2]string{"rate: 100", "rate: -5"}, want: "t.yaml: rate: must be > 0"},
		{name: "rate missing", replace: [2]string{"rate: 100\n", ""}, want: "t.yaml: rate: is required"},
		{name: "duration zero", replace: [2]string{"duration: 10s", "duration: 0"}, want: "t.yaml: line 3: duration: must be > 0, e.g. duration: 30s; got 0s"},
		{name: "duration negative", replace: [2]string{"duration: 10s", "duration: -5s"}, want: "t.yaml: line 3: duration: must be > 0, e.g. duration: 30s; got -5s"},
		{name: "bad duration", replace: [2]string{"duration: 10s", "duration: ten"}, want: `t.yaml: duration: want a duration like "30s" or "10ms", got "ten"`},
		{name: "instance out of range", add: "faults: [{instance: 3, fault: {mode: hang}}]\n", want: "t.yaml: line 7: faults[0].instance: 3 is out of range: instances are 0..2"},
		{name: "negative instance", add: "faults: [{instance: -1, fault: {mode: hang}}]\n", want: "t.yaml: faults[0].instance: -1 is out of range"},
		{name: "fault missing instance", add: "faults: [{fault: {mode: hang}}]\n", want: "t.yaml: faults[0].instance: is required"},
		{name: "unknown fault mode", add: "faults: [{instance: 0, fault: {mode: explode}}]\n", want: "t.yaml: faults[0].fault: "},
		{name: "bad fault param", add: "faults: [{instance: 0, fault: {mode: error-rate, p: 1.5}}]\n", want: "t.yaml: faults[0].fault: "},
		{name: "fault after the end", add: "faults: [{instance: 0, at: 20s, fault: {mode: hang}}]\n", want: "t.yaml: faults[0].at: 20s is not before the end of the run"},
		{name: "until before at", add: "faults: [{instance: 0, at: 5s, until: 2s, fault: {mode: hang}}]\n", want: "t.yaml: line 7: faults[0].until: 2s must be after at (5s)"},
		{name: "overlapping faults", add: "faults: [{instance: 0, at: 1s, until: 5s, fault: {mode: hang}}, {instance: 0, at: 4s, fault: {mode: reset}}]\n", want: "t.yaml: faults[1]: overlaps faults[0] on instance 0"},
		{name: "no instances", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}\n", ""}, want: "t.yaml: instances: is required"},
		{name: "zero instances", replace: [2]string{"count: 3", "count: 0"}, want: "t.yaml: line 5: instances.count: must be >= 1, got 0"},
		{name: "negative workers", replace: [2]string{"count: 3,", "count: 3, workers: -1,"}, want: "t.yaml: instances.workers: must be >= 0"},
		{name: "bad service", replace: [2]string{"dist: fixed", "dist: pareto"}, want: "t.yaml: instances.service: "},
		{name: "service unknown field", replace: [2]string{"value: 10ms", "value: 10ms, shape: 2"}, want: "t.yaml: instances.service: "},
		{name: "no strategies", replace: [2]string{"strategies: [round-robin]\n", ""}, want: "t.yaml: strategies: is required: e.g. strategies: [round-robin, least-inflight]"},
		{name: "duplicate strategy", replace: [2]string{"[round-robin]", "[p2c, p2c]"}, want: `t.yaml: strategies[1]: "p2c" is listed twice`},
		{name: "bad arrival", add: "arrival: bursty\n", want: `t.yaml: arrival: must be "poisson" or "constant", got "bursty"`},
		{name: "retry attempts zero", replace: [2]string{"[round-robin]", `["round-robin+retry(attempts=0)"]`}, want: "t.yaml: strategies[0]: retry: attempts: want an integer >= 1"},
		{name: "retry budget over 100%", replace: [2]string{"[round-robin]", `["round-robin+retry(budget=150%)"]`}, want: "t.yaml: strategies[0]: retry: budget: want a share in (0, 100%]"},
		{name: "retry unknown condition", replace: [2]string{"[round-robin]", `["round-robin+retry(on=5xx|teapot)"]`}, want: `retry: on: unknown condition "teapot"`},
		{name: "per-try timeout past the timeout", replace: [2]string{"[round-robin]", `["round-robin+retry(per_try_timeout=5s)"]`}, add: "timeout: 2s\n", want: "t.yaml: strategies[0]: retry: per_try_timeout 5s is not shorter than the timeout (2s)"},
		{name: "hedge delay past the timeout", replace: [2]string{"[round-robin]", `["round-robin+hedge(delay=3s)"]`}, add: "timeout: 2s\n", want: "t.yaml: strategies[0]: hedge: delay 3s is not shorter than the timeout (2s)"},
		{name: "retry over grpc", replace: [2]string{"[round-robin]", `["round-robin+retry"]`}, add: "protocol: grpc\n", want: "under protocol grpc use grpc-go's own retry policy"},
		{name: "bad eject param", replace: [2]string{"[round-robin]", `["p2c+eject(consecutive=x)"]`}, want: "t.yaml: strategies[0]: "},
		{name: "instance and instances", add: "faults: [{instance: 0, instances: [1], fault: {mode: hang}}]\n", want: "t.yaml: line 7: faults[0]: give instance or instances, not both"},
		{name: "instances out of range", add: "faults: [{instances: [0, 5], fault: {mode: hang}}]\n", want: "t.yaml: faults[0].instances[1]: 5 is out of range"},
		{name: "instances twice", add: "faults: [{instances: [1, 1], fault: {mode: hang}}]\n", want: "t.yaml: line 7: faults[0].instances: lists instance 1 twice"},
		{name: "groups disagree with count", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {count: 3, service: {dist: fixed, value: 10ms}, groups: [{count: 2}]}"}, want: "t.yaml: instances.count: is 3 but the groups hold 2 instances"},
		{name: "group without service", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {groups: [{count: 2}]}"}, want: "t.yaml: instances.groups[0].service: is required"},
		{name: "group zero count", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 0}]}"}, want: "t.yaml: instances.groups[0].count: must be >= 1"},
		{name: "group bad weight", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 2, weight: 0}]}"}, want: "t.yaml: instances.groups[0].weight: must be a number > 0"},
		{name: "warmup without join", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 2}, {warmup: {duration: 1s, factor: 2}}]}"}, want: "t.yaml: instances.groups[1].warmup: needs join_at"},
		{name: "warmup without factor", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 2}, {join_at: 2s, warmup: {duration: 1s}}]}"}, want: "t.yaml: instances.groups[1].warmup.factor: is required"},
		{name: "join after the end", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 2}, {join_at: 10s}]}"}, want: "t.yaml: instances (instance 2).join_at: 10s is not before the end of the run"},
		{name: "everyone joins late", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 2, join_at: 1s}]}"}, want: "t.yaml: instances: every instance has a join_at after the start"},
		{name: "warm-up overlaps a fault", replace: [2]string{"instances: {count: 3, service: {dist: fixed, value: 10ms}}", "instances: {service: {dist: fixed, value: 10ms}, groups: [{count: 2}, {join_at: 2s, warmup: {duration: 3s, factor: 5}}]}"}, add: "faults: [{instance: 2, at: 4s, fault: {mode: hang}}]\n", want: "t.yaml: faults[1]: the warm-up of instance 2 overlaps faults[0]"},
		{name: "replicas zero", add: "replicas: 0\n", want: "t.yaml: line 7: replicas: must be within [1, 64], got 0"},
		{name: "generators zero", add: "generators: 0\n", want: "t.yaml: line 7: generators: must be within [1, 64], got 0"},
		{name: "generators negative", add: "generators: -2\n", want: "t.yaml: line 7: generators: must be within [1, 64], got -2"},
		{name: "too many balancers", add: "generators: 8\nreplicas: 9\n", want: "t.yaml: line 7: generators: 8 generators of 9 replicas are 72 balancers; at most 64"},
		{name: "keys without dist", add: "keys: {n: 10}\n", want: "t.yaml: keys.dist: is required"},
		{name: "keys bad dist", add: "keys: {dist: pareto, n: 10}\n", want: `t.yaml: keys.dist: must be uniform, zipf or sequence, got "pareto"`},
		{name: "zipf without s", add: "keys: {dist: zipf, n: 10}\n", want: "t.yaml: keys.s: is required for zipf"},
		{name: "s on uniform", add: "keys: {dist: uniform, n: 10, s: 1}\n", want: "t.yaml: line 7: keys.s: applies to dist zipf only"},
		{name: "keys zero n", add: "keys: {dist: uniform, n: 0}\n", want: "t.yaml: keys.n: the number of distinct keys must be within"},
		{name: "hot without share", add: "keys: {dist: uniform, n: 10, hot: {key: 3}}\n", want: "t.yaml: keys.hot.share: is required"},
		{name: "hot share one", add: "keys: {dist: uniform, n: 10, hot: {key: 3, share: 1}}\n", want: "t.yaml: line 7: keys.hot.share: must be in (0, 1)"},
		{name: "hot until before from", add: "keys: {dist: uniform, n: 10, hot: {share: 0.3, from: 5s, until: 2s}}\n", want: "t.yaml: line 7: keys.hot.until: 2s must be after from (5s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := good
			if tt.replace[0] != "" {
				if !strings.Contains(body, tt.replace[0]) {
					t.Fatalf("test bug: %q not in the good file", tt.replace[0])
				}
				body = strings.Replace(body, tt.replace[0], tt.replace[1], 1)
			}
			body += tt.add
			_, err := Parse("t.yaml", []byte(body))
			if err == nil {
				t.Fatalf("accepted:\n%s", body)
			}
			if !strings.Contains(msg(err, tt.want), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	_, err := Parse("empty.yaml", nil)
	if err == nil || err.Error() != "empty.yaml: empty experiment file" {
		t.Errorf("err = %v", err)
	}
}

func TestLoadFileAndUnknownName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.Source != path || e.Name != "t" {
		t.Errorf("source %q name %q", e.Source, e.Name)
	}
	if _, err := Load("nope"); err == nil || !strings.Contains(err.Error(), `unknown experiment "nope" (shipped: all-failing, app-fast-fail, app-slow-instance, baseline, blackhole-instance, burst, cold-start, crash`) {
		t.Errorf("err = %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestOverrides(t *testing.T) {
	e, err := Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(7)
	got, err := e.Apply(Overrides{Duration: 5 * time.Second, Rate: 2000, Seed: &seed, Strategies: []string{"p2c"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Duration != 5*time.Second || got.Rate != 2000 || got.Seed != 7 || len(got.Strategies) != 1 {
		t.Errorf("overrides not applied: %+v", got)
	}
	if e.Duration != 30*time.Second || len(e.Strategies) != 11 {
		t.Error("Apply changed the original")
	}
	if len(got.Faults) != 1 {
		t.Errorf("fault at 0s dropped by a shorter run")
	}
	if _, err := e.Apply(Overrides{Strategies: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "strategies[0]") {
		t.Errorf("bad strategy override: %v", err)
	}
	if got, err := e.Apply(Overrides{Generators: 3}); err != nil || got.Generators != 3 || e.Generators != 1 {
		t.Errorf("--generators 3: generators %v (file's %d), error %v", got, e.Generators, err)
	}
	if _, err := e.Apply(Overrides{Generators: -1}); err == nil || !strings.Contains(err.Error(), "--generators: must be within [1, 64], got -1") {
		t.Errorf("--generators -1: error %v", err)
	}
	if _, err := e.Apply(Overrides{Rate: -1}); err == nil || !strings.Contains(err.Error(), "--rate") {
		t.Errorf("negative rate: %v", err)
	}
}

func TestNeedsContainers(t *testing.T) {
	for name, want := range map[string]bool{"baseline": false, "fast-fail": false, "crash": true, "freeze": true, "noisy-neighbor": true} {
		e, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.NeedsContainers(); got != want {
			t.Errorf("%s: NeedsContainers() = %v, want %v", name, got, want)
		}
	}
}

func TestGroupsJoinKeysReplicas(t *testing.T) {
	body := `
name: t
duration: 30s
rate: 100
replicas: 3
instances:
  workers: 4
  service: {dist: fixed, value: 10ms}
  groups:
    - {count: 2, weight: 2}
    - {service: {dist: fixed, value: 20ms}, workers: 1}
    - {join_at: 10s, warmup: {duration: 5s, factor: 5}}
keys: {dist: zipf, n: 100, s: 1.1, hot: {key: 7, share: 0.3, from: 15s}}
faults:
  - instances: [0, 2]
    at: 1s
    until: 2s
    fault: {mode: hang}
strategies: [round-robin]
`
	e, err := Parse("t.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ten, twenty := faultyserver.Fixed(10*time.Millisecond), faultyserver.Fixed(20*time.Millisecond)
	wantEach := []Instance{
		{Workers: 4, Service: ten, Weight: 2},
		{Workers: 4, Service: ten, Weight: 2},
		{Workers: 1, Service: twenty, Weight: 1},
		{Workers: 4, Service: ten, Weight: 1, JoinAt: 10 * time.Second, Warmup: 5 * time.Second, WarmupFactor: 5},
	}
	if d := cmp.Diff(wantEach, e.Instances.Each); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
	if e.Instances.Count != 4 || !e.Instances.Heterogeneous() {
		t.Errorf("count %d, heterogeneous %v; want 4, true", e.Instances.Count, e.Instances.Heterogeneous())
	}
	if d := cmp.Diff([]float64{2, 2, 1, 1}, e.Instances.Weights()); d != "" {
		t.Errorf("weights (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{3}, e.Instances.Joining()); d != "" {
		t.Errorf("joining (-want +got):\n%s", d)
	}
	if e.Replicas != 3 {
		t.Errorf("replicas %d, want 3", e.Replicas)
	}
	wantKeys := &KeySpec{Dist: KeysZipf, N: 100, S: 1.1, HotKey: 7, HotShare: 0.3, HotFrom: 15 * time.Second}
	if d := cmp.Diff(wantKeys, e.Keys); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	// The fault on two instances is two faults; the warm-up a third.
	var got []string
	for _, f := range e.Faults {
		got = append(got, fmt.Sprintf("%d %v-%v %s warmup=%v", f.Instance, f.At, f.Until, faultyserver.Describe(f.Spec), f.Warmup))
	}
	want := []string{"0 1s-2s hang warmup=false", "2 1s-2s hang warmup=false", "3 10s-15s slow factor=5 warmup=true"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("faults (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{0, 2, 3}, e.FaultyInstances()); d != "" {
		t.Errorf("faulty instances (-want +got):\n%s", d)
	}

	// Without groups every instance has the defaults and weight 1.
	plain, err := Parse("t.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Instances.Heterogeneous() || plain.Instances.Weights() != nil || plain.Replicas != 1 || plain.Keys != nil {
		t.Errorf("plain file: heterogeneous %v, weights %v, replicas %d, keys %v", plain.Instances.Heterogeneous(), plain.Instances.Weights(), plain.Replicas, plain.Keys)
	}
}

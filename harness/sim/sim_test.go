package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// simResult is one request's end as the simulator reported it.
type simResult struct {
	engine.Outcome
	so strategies.Outcome
}

// traceSim simulates strategy name of exp and returns its summary and every
// request's result, in arrival order.
// simOptions and runSim run an experiment through the driver with the
// simulator. Expectations that fail are not an error here: the tests
// check what they need themselves.
type simOptions struct{ Log io.Writer }

func runSim(ctx context.Context, exp *experiments.Experiment, opts simOptions) (*reports.Summary, error) {
	sum, err := harness.Run(ctx, exp, harness.Options{Engine: Engine{}, Log: opts.Log})
	var failed *harness.ExpectationsFailed
	if errors.As(err, &failed) {
		err = nil
	}
	return sum, err
}

func traceSim(t *testing.T, exp *experiments.Experiment, name string) (*reports.Strategy, []simResult) {
	t.Helper()
	var rs []simResult
	hooks := simHooks{result: func(o engine.Outcome, so strategies.Outcome) {
		rs = append(rs, simResult{o, so})
	}}
	m, err := simStrategy(context.Background(), exp, name, hooks)
	if err != nil {
		t.Fatal(err)
	}
	st := &m.Strategy
	st.Ejections, st.Events = m.Ejections, m.Events
	slices.SortStableFunc(rs, func(a, b simResult) int { return int(a.SentAt - b.SentAt) })
	runtest.CheckAccounting(t, *st)
	if got, want := st.Requests, int64(len(rs)); got != want {
		t.Fatalf("summary counts %d requests, %d results reported", got, want)
	}
	return st, rs
}

// due is arrival k of a constant schedule at rate per second.
func due(rate float64, k int) time.Duration {
	d, _ := (&engine.ConstantSchedule{PerSecond: rate}).Due(uint64(k))
	return d
}

// summaryJSON renders sum as summary.json.
func summaryJSON(t *testing.T, sum *reports.Summary) string {
	t.Helper()
	var b bytes.Buffer
	if err := reports.WriteJSON(&b, sum); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// strategyJSONs renders each strategy of sum on its own, as the
// summary.json of a run of that strategy alone, by name.
func strategyJSONs(t *testing.T, sum *reports.Summary) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, st := range sum.Strategies {
		one := *sum
		one.Strategies = []reports.Strategy{st}
		one.Notes = nil    // as that run's: its own notes only
		one.Glossary = nil // the run's: in the order its strategies name them
		for _, n := range sum.Notes {
			if strings.HasPrefix(n, st.Name+": ") {
				one.Notes = append(one.Notes, n)
			}
		}
		out[st.Name] = summaryJSON(t, &one)
	}
	return out
}

func TestSimIsDeterministic(t *testing.T) {
	base, err := experiments.Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := base.Apply(experiments.Overrides{Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run := func(exp *experiments.Experiment) *reports.Summary {
		t.Helper()
		sum, err := runSim(context.Background(), exp, simOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	first := run(exp)
	if first.Engine != "sim" || first.Backends != "sim" || !first.Started.Equal(Epoch) ||
		first.GoVersion != "" || first.CPUs != 0 || first.Partial || len(first.Strategies) != builtinStrategies(exp) {
		t.Fatalf("engine %q, backends %q, started %v, go %q, cpus %d, partial %v, %d strategies",
			first.Engine, first.Backends, first.Started, first.GoVersion, first.CPUs, first.Partial, len(first.Strategies))
	}
	if a, b := summaryJSON(t, first), summaryJSON(t, run(exp)); a != b {
		t.Fatalf("two runs of the same experiment differ:\n%s\n---\n%s", a, b)
	}

	reversed := *exp
	reversed.Strategies = slices.Clone(exp.Strategies)
	slices.Reverse(reversed.Strategies)
	want, got := strategyJSONs(t, first), strategyJSONs(t, run(&reversed))
	for _, name := range exp.Strategies {
		if proxyspec.IsProxy(name) || strategies.IsGRPC(name) {
			continue // not simulated
		}
		if want[name] != got[name] {
			t.Errorf("%s: differs when the strategies run in reverse order", name)
		}
	}

	reseeded := *exp
	reseeded.Seed = exp.Seed + 1
	other := strategyJSONs(t, run(&reseeded))
	for _, name := range exp.Strategies {
		if proxyspec.IsProxy(name) || strategies.IsGRPC(name) {
			continue
		}
		if strings.ReplaceAll(other[name], `"seed": 2`, `"seed": 1`) == want[name] {
			t.Errorf("%s: seeds 1 and 2 give the same summary", name)
		}
	}
}

// shrink returns exp with its duration and fault times divided by factor
// and its rate kept.
func shrink(t *testing.T, exp *experiments.Experiment, factor time.Duration) *experiments.Experiment {
	t.Helper()
	c := *exp
	c.Duration /= factor
	c.Faults = slices.Clone(exp.Faults)
	for i := range c.Faults {
		c.Faults[i].At /= factor
		c.Faults[i].Until /= factor
	}
	c.Instances.Each = slices.Clone(exp.Instances.Each)
	for i := range c.Instances.Each {
		c.Instances.Each[i].JoinAt /= factor
		c.Instances.Each[i].Warmup /= factor
	}
	if c.Profile != nil {
		p := experiments.RateProfile{Start: c.Profile.Start, Stages: slices.Clone(c.Profile.Stages)}
		for i := range p.Stages {
			p.Stages[i].Duration /= factor
		}
		c.Profile, c.Rate = &p, p.Mean(c.Duration)
	}
	if r := c.Instances.Kube.Rollout; r != nil {
		rr := *r
		rr.At /= factor
		c.Instances.Kube.Rollout = &rr
	}
	if c.Keys != nil {
		k := *c.Keys
		k.HotFrom /= factor
		k.HotUntil /= factor
		c.Keys = &k
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestSimRunsEveryShippedExperiment(t *testing.T) {
	for _, name := range experiments.Names() {
		t.Run(name, func(t *testing.T) {
			full, err := experiments.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if !Measures(full) {
				t.Skipf("%s runs only with the real engine: %s", name, Engine{}.Skip(full, full.Strategies[0]))
			}
			exp := shrink(t, full, 15) // 30 s -> 2 s, faults at the same relative times
			sum, err := runSim(context.Background(), exp, simOptions{})
			if err == nil && exp.Instances.Kube.Rollout != nil && !slices.Contains(sum.Notes, RolloutNote) {
				t.Errorf("a rolling restart in the simulator: no note that it is not modelled: %q", sum.Notes)
			}
			if err != nil {
				t.Fatal(err)
			}
			builtin := builtinStrategies(exp)
			if len(sum.Strategies) != builtin || sum.Partial {
				t.Fatalf("%d of %d strategies, partial %v", len(sum.Strategies), builtin, sum.Partial)
			}
			sent := int64(engine.ExperimentSchedule(exp).Count(exp.Duration))
			for _, st := range sum.Strategies {
				runtest.CheckAccounting(t, st)
				// Only an ejecting strategy may leave a request no instance
				// ("no healthy upstream").
				noHost := st.Unattributed != 0 && !strings.Contains(st.Name, "+eject")
				if st.Requests != sent || noHost || st.GeneratorBehind {
					t.Errorf("%s: %d requests (%d unattributed, behind %v), the schedule has %d",
						st.Name, st.Requests, st.Unattributed, st.GeneratorBehind, sent)
				}
				if want := float64(sent) / exp.Duration.Seconds(); st.AchievedRate != want {
					t.Errorf("%s: achieved rate %v, want %v", st.Name, st.AchievedRate, want)
				}
				// Every shipped fault fails requests or makes them at least
				// about five times the instance's service time (10 ms unless
				// fixed otherwise), or, under hedging, gets its attempts
				// cancelled.
				for _, f := range exp.Faults {
					base := 10.0
					if svc := exp.Instances.Instance(f.Instance).Service; svc.Kind == faultyserver.DistFixed {
						base = float64(time.Duration(svc.Value)) / float64(time.Millisecond)
					}
					if in := st.Instances[f.Instance]; in.Errors == 0 && in.Cancelled == 0 && in.LatencyMs.Max < 4.5*base {
						t.Errorf("%s: faulty instance %d shows no errors and a max latency of %v ms", st.Name, f.Instance, in.LatencyMs.Max)
					}
				}
			}
		})
	}
}

func TestSimQueueGrowsBehindOneWorker(t *testing.T) {
	// Arrivals every 5 ms at one worker taking 10 ms: request k arrives at
	// Due(k), starts when k-1 ends and ends at (k+1)*10 ms.
	exp := runtest.MustExperiment(t, "queue", `
duration: 100ms
arrival: constant
rate: 200
instances: {count: 1, workers: 1, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`)
	st, rs := traceSim(t, exp, "round-robin")
	if len(rs) != 20 {
		t.Fatalf("%d requests, want 20", len(rs))
	}
	for k, r := range rs {
		want := time.Duration(k+1)*10*time.Millisecond - due(200, k)
		if r.SentAt != due(200, k) || r.Latency != want || r.so.Latency != want || !r.Success || r.so.Status != 200 || r.so.Err != nil {
			t.Errorf("request %d: sent %v, latency %v (strategy saw %v), status %d, err %v; want sent %v, latency %v, 200",
				k, r.SentAt, r.Latency, r.so.Latency, r.so.Status, r.so.Err, due(200, k), want)
		}
	}
	if st.ErrorRatio != 0 || st.TimeoutRatio != 0 {
		t.Errorf("error ratio %v, timeout ratio %v", st.ErrorRatio, st.TimeoutRatio)
	}
}

func TestSimFaultActions(t *testing.T) {
	tests := []struct {
		name    string
		fault   string
		latency time.Duration
		status  int
		err     bool
		timeout bool
	}{
		{"fail answers after its delay", "{mode: fail, status: 502, delay: 3ms}", 3 * time.Millisecond, 502, false, false},
		{"error-rate 1 fails every request", "{mode: error-rate, p: 1, delay: 0s}", 0, 503, false, false},
		{"hang times out at the timeout", "{mode: hang}", 250 * time.Millisecond, 0, true, true},
		{"pause hangs", "{mode: pause}", 250 * time.Millisecond, 0, true, true},
		{"reset fails at once", "{mode: reset}", 0, 0, true, false},
		{"kill resets", "{mode: kill}", 0, 0, true, false},
		{"slow latency replaces the service time", "{mode: slow, latency: 7ms}", 7 * time.Millisecond, 200, false, false},
		{"cpu scales the service time", "{mode: cpu, cpus: 0.5}", 4 * time.Millisecond, 200, false, false},
		{"an answer due at the deadline is an answer", "{mode: slow, latency: 250ms}", 250 * time.Millisecond, 200, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "action", `
duration: 1s
arrival: constant
rate: 50
timeout: 250ms
slow_threshold: 100ms
instances: {count: 1, workers: 0, service: {dist: fixed, value: 2ms}}
faults: [{instance: 0, at: 0s, fault: `+tt.fault+`}]
strategies: [p2c]
`)
			st, rs := traceSim(t, exp, "p2c")
			if len(rs) != 50 {
				t.Fatalf("%d requests, want 50", len(rs))
			}
			for k, r := range rs {
				success := tt.status == 200
				if r.Latency != tt.latency || r.so.Latency != tt.latency || r.so.Status != tt.status ||
					(r.so.Err != nil) != tt.err || r.so.Timeout != tt.timeout || r.Timeout != tt.timeout || r.Success != success {
					t.Fatalf("request %d: latency %v, status %d, err %v, timeout %v, success %v",
						k, r.Latency, r.so.Status, r.so.Err, r.so.Timeout, r.Success)
				}
			}
			wantErr := 0.0
			if tt.status != 200 {
				wantErr = 1
			}
			wantSlow := tt.latency > 100*time.Millisecond
			if st.ErrorRatio != wantErr || (st.TimeoutRatio == 1) != tt.timeout || (st.SlowRatio == 1) != wantSlow {
				t.Errorf("error ratio %v, timeout ratio %v, slow ratio %v", st.ErrorRatio, st.TimeoutRatio, st.SlowRatio)
			}
		})
	}
}

func TestSimAbandonedRequests(t *testing.T) {
	// One worker, 10 ms requests every 100 ms, an 80 ms timeout. Request 0
	// arrives under a 500 ms slow fault and times out at 80 ms. Dropped,
	// it frees the worker and every later request takes 10 ms. Kept, it
	// holds the worker until 500 ms; requests 1-4 queue behind it, time out
	// and are then served for nothing; request 5 arrives at 500 ms and
	// waits for them: 40 ms in the queue.
	ms := time.Millisecond
	for _, tt := range []struct {
		keep     bool
		timeouts int
		latency  map[int]time.Duration // of the requests that succeed
	}{
		{false, 1, map[int]time.Duration{1: 10 * ms, 5: 10 * ms, 9: 10 * ms}},
		{true, 5, map[int]time.Duration{5: 50 * ms, 6: 10 * ms, 9: 10 * ms}},
	} {
		t.Run(fmt.Sprintf("keep_abandoned=%v", tt.keep), func(t *testing.T) {
			exp := runtest.MustExperiment(t, "abandon", fmt.Sprintf(`
duration: 1s
arrival: constant
rate: 10
timeout: 80ms
instances: {count: 1, workers: 1, keep_abandoned: %v, service: {dist: fixed, value: 10ms}}
faults: [{instance: 0, at: 0s, until: 50ms, fault: {mode: slow, latency: 500ms}}]
strategies: [round-robin]
`, tt.keep))
			_, rs := traceSim(t, exp, "round-robin")
			if len(rs) != 10 {
				t.Fatalf("%d requests, want 10", len(rs))
			}
			for k, r := range rs {
				if k < tt.timeouts {
					if !r.Timeout || r.Latency != 80*ms {
						t.Errorf("request %d: latency %v, timeout %v; want an 80 ms timeout", k, r.Latency, r.Timeout)
					}
					continue
				}
				if !r.Success {
					t.Errorf("request %d failed (timeout %v)", k, r.Timeout)
				}
				if want, ok := tt.latency[k]; ok && r.Latency != want {
					t.Errorf("request %d: latency %v, want %v", k, r.Latency, want)
				}
			}
		})
	}
}

func TestSimQueueLimitAnswers503(t *testing.T) {
	// One worker of 100 ms, room for two in the queue, ten requests 10 ms
	// apart: 0 is served, 1 and 2 wait, the other seven find the queue full.
	exp := runtest.MustExperiment(t, "full", `
duration: 100ms
arrival: constant
rate: 100
instances: {count: 1, workers: 1, queue_limit: 2, service: {dist: fixed, value: 100ms}}
strategies: [round-robin]
`)
	st, rs := traceSim(t, exp, "round-robin")
	if len(rs) != 10 {
		t.Fatalf("%d requests, want 10", len(rs))
	}
	for k, r := range rs {
		switch {
		case k < 3:
			want := time.Duration(k+1)*100*time.Millisecond - due(100, k)
			if !r.Success || r.Latency != want {
				t.Errorf("request %d: success %v, latency %v; want %v", k, r.Success, r.Latency, want)
			}
		case r.so.Status != 503 || r.so.Err != nil || r.Latency != 0:
			t.Errorf("request %d: status %d, err %v, latency %v; want 503 at once", k, r.so.Status, r.so.Err, r.Latency)
		}
	}
	if st.ErrorRatio != 0.7 {
		t.Errorf("error ratio %v, want 0.7", st.ErrorRatio)
	}
}

func TestSimFaultWindow(t *testing.T) {
	exp := runtest.MustExperiment(t, "window", `
duration: 3s
arrival: constant
rate: 100
instances: {count: 2, workers: 0, service: {dist: fixed, value: 5ms}}
faults:
  - {instance: 1, at: 1s, until: 2s, fault: {mode: fail, status: 500, delay: 0s}}
strategies: [round-robin]
`)
	st, rs := traceSim(t, exp, "round-robin")
	for k, r := range rs {
		inWindow := r.Instance == 1 && r.SentAt >= time.Second && r.SentAt < 2*time.Second
		if r.Success == inWindow {
			t.Errorf("request %d to instance %d sent at %v: success %v", k, r.Instance, r.SentAt, r.Success)
		}
	}
	in1 := st.Timeline.Instances[1]
	for sec := range in1.Requests {
		if want := map[bool]int64{true: in1.Requests[sec], false: 0}[sec == 1]; in1.Errors[sec] != want || in1.Requests[sec] != 50 {
			t.Errorf("second %d: %d errors in %d requests, want %d in 50", sec, in1.Errors[sec], in1.Requests[sec], want)
		}
	}
}

func TestSimEjectsAndReadmitsOnVirtualTime(t *testing.T) {
	// Round robin over four instances, one request per ms: instance 0 gets
	// every fourth and fails each after 1 ms. Its fifth failure (request
	// 16) ejects it; it comes back at the first pick 500 ms later.
	exp := runtest.MustExperiment(t, "eject", `
duration: 3s
arrival: constant
rate: 1000
instances: {count: 4, workers: 0, service: {dist: fixed, value: 2ms}}
faults: [{instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}]
strategies: ["round-robin+eject(consecutive=5,duration=500ms)"]
`)
	st, _ := traceSim(t, exp, exp.Strategies[0])
	evs := st.Events
	if len(evs) < 4 || st.Ejections != (len(evs)+1)/2 {
		t.Fatalf("%d ejections, events %+v", st.Ejections, evs)
	}
	firstEject := (due(1000, 16) + time.Millisecond).Seconds()
	if evs[0].Kind != strategies.EventEject || evs[0].Instance != 0 || evs[0].TimeS != firstEject {
		t.Errorf("first event %+v, want eject of 0 at %v s", evs[0], firstEject)
	}
	for i, e := range evs {
		want := []string{strategies.EventEject, strategies.EventReadmit}[i%2]
		if e.Kind != want || e.Instance != 0 {
			t.Errorf("event %d: %+v, want %s of 0", i, e, want)
		}
		if want == strategies.EventReadmit {
			// Re-admitted at the first pick at or after the ejection's end;
			// the k-th ejection lasts k·500ms (no decay within 3s).
			end := evs[i-1].TimeS + 0.5*float64((i+1)/2)
			if e.TimeS < end-1e-9 || e.TimeS > end+0.001+1e-9 {
				t.Errorf("event %d: re-admitted at %v s, ejected at %v s", i, e.TimeS, evs[i-1].TimeS)
			}
		}
	}
	// Five failures per half second, out of 500 picks.
	if in := st.Instances[0]; in.Requests > 40 || in.Errors != in.Requests {
		t.Errorf("instance 0: %d requests, %d errors", in.Requests, in.Errors)
	}
}

func TestSimInterrupt(t *testing.T) {
	exp := runtest.MustExperiment(t, "interrupt", `
duration: 30s
rate: 1000
instances: {count: 3, workers: 1, service: {dist: fixed, value: 5ms}}
faults: [{instance: 0, at: 0s, fault: {mode: hang}}]
strategies: [round-robin, p2c]
`)
	t.Run("during a strategy", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hooks := simHooks{second: func(now time.Duration) {
			if now == 2*time.Second {
				cancel()
			}
		}}
		m, err := simStrategy(ctx, exp, "round-robin", hooks)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Interrupted || m.Elapsed < 2*time.Second || m.Elapsed > 3*time.Second || m.Strategy.Requests < 1000 || m.Strategy.Requests > 3000 {
			t.Errorf("interrupted %v, elapsed %v, %d requests", m.Interrupted, m.Elapsed, m.Strategy.Requests)
		}
		if m.Aborted == 0 {
			t.Error("no request in flight was counted as aborted")
		}
	})
	t.Run("between strategies", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sum, err := runSim(ctx, exp, simOptions{Log: writerFunc(func(p []byte) (int, error) {
			if strings.Contains(string(p), "done:") {
				cancel() // after the first strategy
			}
			return len(p), nil
		})})
		if !errors.Is(err, harness.ErrInterrupted) {
			t.Fatalf("err = %v, want ErrInterrupted", err)
		}
		if !sum.Partial || len(sum.Strategies) != 1 || sum.Strategies[0].Partial {
			t.Errorf("partial %v, %d strategies", sum.Partial, len(sum.Strategies))
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)

func TestSimRejectsFaultOnMissingInstance(t *testing.T) {
	exp := runtest.MustExperiment(t, "missing", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{instance: 1, fault: {mode: hang}}]
strategies: [random]
`)
	exp.Faults[0].Instance = 5
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err == nil || !strings.Contains(err.Error(), "instance 5 does not exist") {
		t.Fatalf("err = %v", err)
	}
	// The error contract of every engine: what was measured (nothing here)
	// comes back with the error.
	if sum == nil || len(sum.Strategies) != 0 {
		t.Errorf("summary %+v, want one with no strategy", sum)
	}
}

// TestSimScenarios checks that the shipped fast-fail and slow-instance
// experiments, shortened to 10 s, show in simulation what they show for
// real. BenchmarkSimShipped runs them in full.
func TestSimScenarios(t *testing.T) {
	load := func(name string, strategies ...string) map[string]reports.Strategy {
		full, err := experiments.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := full.Apply(experiments.Overrides{Duration: 10 * time.Second, Strategies: strategies})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := runSim(context.Background(), exp, simOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]reports.Strategy{}
		for _, st := range sum.Strategies {
			runtest.CheckAccounting(t, st)
			out[st.Name] = st
		}
		return out
	}
	const eject = "least-inflight+eject(consecutive=5,duration=5s)"
	ff := load("fast-fail", "round-robin", "least-inflight", eject)
	rr, li, ej := ff["round-robin"], ff["least-inflight"], ff[eject]
	if li.FaultyShare <= 2*rr.FaultyShare {
		t.Errorf("fast-fail: least-inflight faulty share %v, round-robin %v; want more than twice", li.FaultyShare, rr.FaultyShare)
	}
	if ej.ErrorRatio >= 0.005 || ej.Ejections == 0 {
		t.Errorf("fast-fail: eject error ratio %v with %d ejections", ej.ErrorRatio, ej.Ejections)
	}

	si := load("slow-instance", "round-robin", "least-inflight")
	if r := si["round-robin"].SlowRatio; r <= 0.05 || r > 0.11 {
		t.Errorf("slow-instance: round-robin slow ratio %v, want about 0.1", r)
	}
	if p99 := si["least-inflight"].LatencyMs.P99; p99 >= 1000 {
		t.Errorf("slow-instance: least-inflight p99 %v ms", p99)
	}
}

// TestEventQueueOrder checks the event queue against a sort by (at, seq),
// with pushes in and out of time order, ties, and pops interleaved.
func TestEventQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var (
		q    eventQueue
		ref  []simEvent
		seq  uint64
		now  time.Duration
		pops int
	)
	for step := range 200000 {
		if q.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(ref))
		}
		if len(ref) > 0 && r.IntN(2) == 0 {
			slices.SortFunc(ref, func(a, b simEvent) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return int(a.seq) - int(b.seq)
			})
			if next := q.next(); next != ref[0].at {
				t.Fatalf("step %d: next %v, want %v", step, next, ref[0].at)
			}
			if got := q.pop(); got != ref[0] {
				t.Fatalf("step %d: pop %+v, want %+v", step, got, ref[0])
			}
			now = ref[0].at
			ref = ref[1:]
			pops++
			continue
		}
		// Mostly a fixed delay (in order), sometimes a shorter one or a tie.
		d := []time.Duration{10, 10, 10, 3, 0, time.Duration(r.IntN(20))}[r.IntN(6)]
		e := simEvent{at: now + d, seq: seq, slot: int32(step)}
		seq++
		q.push(e)
		ref = append(ref, e)
	}
	if q.next() != never && len(ref) == 0 {
		t.Errorf("next %v on an empty queue", q.next())
	}
	if pops < 50000 {
		t.Errorf("only %d pops", pops)
	}
}

// builtinStrategies counts exp's strategies a simulation runs: all but the
// real proxies and grpc-go's balancers.
func builtinStrategies(exp *experiments.Experiment) int {
	n := 0
	for _, s := range exp.Strategies {
		if !proxyspec.IsProxy(s) && !strategies.IsGRPC(s) {
			n++
		}
	}
	return n
}

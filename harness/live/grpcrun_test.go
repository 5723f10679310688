package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// gRPC load against process backends: grpc-go's round_robin gives the
// fast-failing instance its turn, pick_first pins it (the first address),
// a built-in strategy picking per call ejects it; raw results carry the
// status. A connection-scope reset of instance 1 shows in the policies'
// subchannel events.
func TestRunGRPCFastFail(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "grpc-mini", `
seed: 3
duration: 2s
rate: 500
protocol: grpc
replicas: 2
instances: {count: 5, workers: 4, service: {dist: fixed, value: 5ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
  - {instance: 1, at: 1s, until: 1100ms, fault: {mode: reset, scope: connection}}
strategies: [grpc:round_robin, grpc:pick_first, "least-inflight+eject(consecutive=5,duration=10s,max=0.5)"]
`)
	raw := t.TempDir()
	sum, err := run(context.Background(), exp, Options{RawDir: raw})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Partial || len(sum.Strategies) != 3 {
		t.Fatalf("partial=%v strategies=%d", sum.Partial, len(sum.Strategies))
	}
	rr := runtest.StrategyByName(t, sum, "grpc:round_robin")
	pf := runtest.StrategyByName(t, sum, "grpc:pick_first")
	ej := runtest.StrategyByName(t, sum, "least-inflight+eject(consecutive=5,duration=10s,max=0.5)")
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		if st.Requests < 900 {
			t.Errorf("%s: only %d calls at 500/s for 2 s", st.Name, st.Requests)
		}
		if in := st.Instances[0]; in.Requests > 0 && in.ErrorRatio != 1 {
			t.Errorf("%s: faulty instance error ratio %v, want 1", st.Name, in.ErrorRatio)
		}
		for _, in := range st.Instances[2:] {
			if in.Errors != 0 {
				t.Errorf("%s: healthy instance %d had %d errors", st.Name, in.ID, in.Errors)
			}
		}
	}
	if share := rr.Instances[0].Share; share < 0.17 || share > 0.23 {
		t.Errorf("round_robin's share on instance 0 %v, want about 0.2 (its turn)", share)
	}
	if pf.Instances[0].Share != 1 || pf.ErrorRatio != 1 {
		t.Errorf("pick_first's share on instance 0 %v, error ratio %v; want 1 and 1 (pinned to the first address, instance 0)", pf.Instances[0].Share, pf.ErrorRatio)
	}
	// The reset closes round_robin's connections to instance 1: its
	// subchannels go idle, reconnect and are ready again.
	kinds := map[string]bool{}
	for _, e := range rr.Events {
		if e.Instance == 1 {
			kinds[e.Kind] = true
		}
	}
	if !kinds[EventSubchannelIdle] || !kinds[EventSubchannelReady] {
		t.Errorf("round_robin's subchannel events of instance 1: %v, want idle and ready again after the reset; all: %+v", kinds, rr.Events)
	}
	// Each replica ejects instance 0 after its 5 consecutive failures.
	if share := ej.Instances[0].Share; share > 0.03 || ej.Ejections < 2 {
		t.Errorf("least-inflight+eject over gRPC: share on instance 0 %v, %d ejections; want it ejected by both replicas", share, ej.Ejections)
	}
	dec := vegeta.NewDecoder(openResults(t, raw, "grpc-round-robin"))
	var n, unavailable int
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			break
		}
		n++
		if r.Code == 503 && strings.Contains(r.Error, "Unavailable") {
			unavailable++
		}
	}
	if int64(n) != rr.Requests || unavailable == 0 {
		t.Errorf("raw results: %d (want %d), %d with 503 and the status", n, rr.Requests, unavailable)
	}
}

func TestRunGRPCInterruptLeavesNothing(t *testing.T) {
	exp := runtest.MustExperiment(t, "grpc-interrupt", `
duration: 30s
rate: 300
protocol: grpc
instances: {count: 3, workers: 1, service: {dist: fixed, value: 50ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: hang}}
strategies: [grpc:round_robin, p2c]
`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	start := time.Now()
	sum, err := run(ctx, exp, Options{})
	if !errors.Is(err, harness.ErrInterrupted) {
		t.Fatalf("err = %v, want harness.ErrInterrupted", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("interrupt took %v to stop", took)
	}
	if !sum.Partial || len(sum.Strategies) != 1 || !sum.Strategies[0].Partial {
		t.Fatalf("partial=%v strategies=%d", sum.Partial, len(sum.Strategies))
	}
	if st := sum.Strategies[0]; st.Requests == 0 || st.ElapsedS > 2 {
		t.Errorf("requests %d, elapsed %v s", st.Requests, st.ElapsedS)
	}
	// goleak in TestMain checks that no backend or call goroutine is left.
}

func TestGRPCStrategyNeedsGRPCLoad(t *testing.T) {
	exp := runtest.MustExperiment(t, "grpc-http", `
duration: 1s
rate: 10
protocol: grpc
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [grpc:round_robin]
`)
	exp.Protocol = "http1" // as if built without the file's validation
	_, err := run(context.Background(), exp, Options{})
	if err == nil || !strings.Contains(err.Error(), "strategy grpc:round_robin: a grpc-go balancer needs protocol: grpc (the experiment's protocol is http1)") {
		t.Fatalf("err = %v", err)
	}
}

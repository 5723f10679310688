package sim

import (
	"context"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// TestSimSplitsLatencyByOutcome runs fast-fail in the simulator: the
// faulty instance fails in 1 ms, so every request's latency is pulled
// below the healthy instances', while the successful requests' is not.
func TestSimSplitsLatencyByOutcome(t *testing.T) {
	full, err := experiments.Load("fast-fail")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := full.Apply(experiments.Overrides{Duration: 3 * time.Second, Strategies: []string{"least-inflight"}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]
	ok, failed := st.LatencyOkMs, st.LatencyFailedMs
	if ok == nil || failed == nil {
		t.Fatalf("latency_ok_ms %v, latency_failed_ms %v: want both", ok, failed)
	}
	if !(failed.P99 < 2 && ok.P50 > 5 && st.LatencyMs.Mean < ok.Mean) {
		t.Errorf("every request mean %v, successful mean %v and p50 %v, failed p99 %v: want failures near 1 ms pulling the overall mean below the successes'",
			st.LatencyMs.Mean, ok.Mean, ok.P50, failed.P99)
	}
	in0 := st.Instances[0]
	if !in0.Faulty || in0.LatencyOkMs != nil || in0.LatencyFailedMs == nil {
		t.Errorf("faulty instance 0: ok %v failed %v, want only failures", in0.LatencyOkMs, in0.LatencyFailedMs)
	}
	if len(st.PercentilesOK) == 0 || st.PercentilesOK[0].LatencyMs < 5 {
		t.Errorf("percentiles_ok %v, want a curve of the successes", st.PercentilesOK)
	}
	s1 := st.Timeline.Instances[1]
	if len(s1.P99OkMs) != len(s1.Requests) || s1.P99OkMs[0] <= 0 {
		t.Errorf("instance 1 per-second successful p99 %v", s1.P99OkMs)
	}
}

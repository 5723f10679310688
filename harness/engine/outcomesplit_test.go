package engine

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"testing"
	"time"
)

// TestCollectorSplitsLatencyByOutcome checks that a fast-failing instance
// cannot pull the successful requests' latency down: latency_ms covers
// every request, latency_ok_ms and latency_failed_ms each outcome alone,
// overall, per instance, per second and as percentile curves.
func TestCollectorSplitsLatencyByOutcome(t *testing.T) {
	c := NewCollector(2, 2*time.Second, time.Second, 500*time.Millisecond)
	for i := range 100 {
		sent := time.Duration(i) * 10 * time.Millisecond
		c.Add(Outcome{Instance: 0, SentAt: sent, Latency: time.Millisecond, Success: false})     // fails fast
		c.Add(Outcome{Instance: 1, SentAt: sent, Latency: 50 * time.Millisecond, Success: true}) // healthy
	}
	c.Finish()
	st := c.Strategy("x", []int{0})

	near := func(got, want float64) bool { return got > want*0.99 && got < want*1.01 }
	if !near(st.LatencyMs.P50, 1) && !near(st.LatencyMs.P50, 50) {
		t.Errorf("latency_ms p50 %v: want every request's (1 or 50 ms)", st.LatencyMs.P50)
	}
	if !near(st.LatencyMs.Max, 50) || !near(st.LatencyMs.Mean, 25.5) {
		t.Errorf("latency_ms %+v: want every request's (mean 25.5, max 50)", st.LatencyMs)
	}
	if st.LatencyOkMs == nil || !near(st.LatencyOkMs.P50, 50) || !near(st.LatencyOkMs.P99, 50) {
		t.Errorf("latency_ok_ms %+v, want 50 ms throughout", st.LatencyOkMs)
	}
	if st.LatencyFailedMs == nil || !near(st.LatencyFailedMs.P99, 1) {
		t.Errorf("latency_failed_ms %+v, want 1 ms throughout", st.LatencyFailedMs)
	}
	in0, in1 := st.Instances[0], st.Instances[1]
	if in0.LatencyOkMs != nil || in0.LatencyFailedMs == nil || !near(in0.LatencyFailedMs.P50, 1) {
		t.Errorf("instance 0: ok %+v failed %+v, want no successes and 1 ms failures", in0.LatencyOkMs, in0.LatencyFailedMs)
	}
	if in1.LatencyFailedMs != nil || in1.LatencyOkMs == nil || !near(in1.LatencyOkMs.P99, 50) {
		t.Errorf("instance 1: ok %+v failed %+v, want 50 ms successes and no failures", in1.LatencyOkMs, in1.LatencyFailedMs)
	}
	s0, s1 := st.Timeline.Instances[0], st.Timeline.Instances[1]
	if !near(s0.P99Ms[0], 1) || s0.P99OkMs[0] != 0 {
		t.Errorf("instance 0 second 0: p99 %v, successful p99 %v; want 1 and none (0)", s0.P99Ms[0], s0.P99OkMs[0])
	}
	if !near(s1.P99OkMs[0], 50) || !near(s1.P50OkMs[0], 50) {
		t.Errorf("instance 1 second 0: successful p50 %v p99 %v, want 50", s1.P50OkMs[0], s1.P99OkMs[0])
	}
	if n := len(st.PercentilesOK); n == 0 || !near(st.PercentilesOK[0].LatencyMs, 50) {
		t.Errorf("percentiles_ok %v, want a curve at 50 ms", st.PercentilesOK)
	}
	if n := len(st.PercentilesFailed); n == 0 || !near(st.PercentilesFailed[n-1].LatencyMs, 1) {
		t.Errorf("percentiles_failed %v, want a curve at 1 ms", st.PercentilesFailed)
	}
}

// TestMergedCollectorSplitsLatencyByOutcome checks that a distributed run's
// end-of-stream totals carry the split (the per-second series travel in
// bucket frames; the stream tests compare a merge with one collector).
func TestMergedCollectorSplitsLatencyByOutcome(t *testing.T) {
	gen := NewCollector(1, time.Second, time.Second, time.Second)
	gen.EmitBuckets(func(int, []*hdrhistogram.PackedHistogram, []*hdrhistogram.PackedHistogram) {})
	gen.Add(Outcome{Instance: 0, Latency: 40 * time.Millisecond, Success: true})
	gen.Add(Outcome{Instance: 0, Latency: 2 * time.Millisecond})
	gen.Finish()
	tot, err := gen.totals()
	if err != nil {
		t.Fatal(err)
	}
	merged := NewCollector(1, time.Second, time.Second, time.Second)
	if err := merged.mergeTotals(&tot); err != nil {
		t.Fatal(err)
	}
	merged.Finish()
	st := merged.Strategy("x", nil)
	if st.LatencyOkMs == nil || st.LatencyOkMs.Max < 39 || st.LatencyFailedMs == nil || st.LatencyFailedMs.Max > 3 {
		t.Errorf("merged ok %+v failed %+v, want 40 ms and 2 ms", st.LatencyOkMs, st.LatencyFailedMs)
	}
	if ok := st.Instances[0].LatencyOkMs; ok == nil || ok.P50 < 39 {
		t.Errorf("merged instance 0 ok %+v, want 40 ms", ok)
	}
}

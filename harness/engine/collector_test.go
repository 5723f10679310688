package engine

import (
	"testing"
	"time"
)

func TestCollectorBucketsAndReduction(t *testing.T) {
	c := NewCollector(2, 5*time.Second, time.Second, 100*time.Millisecond)
	add := func(inst int, sent, lat time.Duration, ok bool) {
		c.Add(Outcome{Instance: inst, SentAt: sent, Latency: lat, Success: ok})
	}
	for i := range 100 {
		add(0, time.Duration(i)*10*time.Millisecond, 10*time.Millisecond, true) // second 0
	}
	add(1, 1500*time.Millisecond, 200*time.Millisecond, false) // second 1, slow error
	add(1, 4900*time.Millisecond, 5*time.Millisecond, true)    // second 4
	add(0, 9*time.Second, time.Millisecond, true)              // sent past the end: clamped to the last bucket

	// Second 0 settles after 1 s + timeout + 2 s; second 1 not yet.
	c.Sweep(4 * time.Second)
	if c.finalized != 1 {
		t.Fatalf("finalized %d buckets, want 1", c.finalized)
	}
	if _, open := c.open[0]; open {
		t.Error("bucket 0 still holds its histograms")
	}
	// A result for a reduced bucket is still counted, not lost.
	add(0, 500*time.Millisecond, 10*time.Millisecond, true)
	if c.late != 1 {
		t.Errorf("late = %d, want 1", c.late)
	}
	c.Finish()
	if len(c.open) != 0 {
		t.Errorf("%d buckets left open after finish", len(c.open))
	}

	st := c.Strategy("x", []int{1})
	if st.Requests != 104 {
		t.Errorf("requests %d, want 104", st.Requests)
	}
	s0, s1 := st.Timeline.Instances[0], st.Timeline.Instances[1]
	if s0.Requests[0] != 101 || s0.Requests[4] != 1 || s1.Requests[1] != 1 || s1.Errors[1] != 1 {
		t.Errorf("series: %v / %v errors %v", s0.Requests, s1.Requests, s1.Errors)
	}
	if p := s0.P50Ms[0]; p < 9.9 || p > 10.1 {
		t.Errorf("instance 0 second 0 p50 %v ms, want 10", p)
	}
	if p := s1.P99Ms[1]; p < 199 || p > 201 {
		t.Errorf("instance 1 second 1 p99 %v ms, want 200", p)
	}
	if st.Instances[1].Slow != 1 || st.SlowRatio != 1.0/104 {
		t.Errorf("slow: instance 1 %d, ratio %v", st.Instances[1].Slow, st.SlowRatio)
	}
	if st.FaultyShare != 2.0/104 {
		t.Errorf("faulty share %v", st.FaultyShare)
	}
	if st.Instances[1].ErrorRatio != 0.5 {
		t.Errorf("instance 1 error ratio %v", st.Instances[1].ErrorRatio)
	}
}

// Four times the request timeout shows what an hour would: from the
// timeout on, every second opens one bucket and closes one. (An hour of
// seconds took 4 minutes under -race, most of a CI run's margin.)
func TestCollectorMemoryDoesNotGrowWithRequests(t *testing.T) {
	c := NewCollector(10, time.Hour, 30*time.Second, time.Second)
	for s := range 120 {
		for i := range 10 {
			c.Add(Outcome{Instance: i, SentAt: time.Duration(s) * time.Second, Latency: time.Duration(1+s%50) * time.Millisecond, Success: true})
		}
		c.Sweep(time.Duration(s) * time.Second)
		// Open buckets are bounded by the settle time, not the run's length.
		if len(c.open) > 34 {
			t.Fatalf("at second %d, %d buckets are open", s, len(c.open))
		}
	}
}

func TestPercentileCurve(t *testing.T) {
	c := NewCollector(1, time.Second, time.Second, time.Second)
	for i := 1; i <= 10000; i++ {
		c.Add(Outcome{Instance: 0, Latency: time.Duration(i) * time.Microsecond * 100, Success: true})
	}
	curve := c.Strategy("x", nil).Percentiles
	if len(curve) < 20 || curve[0].Percentile != 50 || curve[len(curve)-1].Percentile != 100 {
		t.Fatalf("curve from %v to %v, %d points", curve[0], curve[len(curve)-1], len(curve))
	}
	has9999 := false
	for i, pt := range curve {
		if pt.Percentile == 99.99 {
			has9999 = true
		}
		if i > 0 && (pt.Percentile <= curve[i-1].Percentile || pt.LatencyMs < curve[i-1].LatencyMs) {
			t.Errorf("point %d %+v does not follow %+v", i, pt, curve[i-1])
		}
	}
	if !has9999 {
		t.Error("no 99.99 point")
	}
	if p50 := curve[0].LatencyMs; p50 < 499 || p50 > 501 {
		t.Errorf("p50 %v ms, want 500", p50)
	}
	if max := curve[len(curve)-1].LatencyMs; max < 999 || max > 1001 {
		t.Errorf("max %v ms, want 1000", max)
	}
}

package engine

import (
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

func abortExp(slow time.Duration, conds ...experiments.Abort) *experiments.Experiment {
	return &experiments.Experiment{SlowThreshold: slow, Abort: conds}
}

// TestAbortWatchWindow: a condition is judged at slice ends once a whole
// window has passed, over the results that ended in the last window,
// whatever order they arrive in; an empty window trips nothing.
func TestAbortWatchWindow(t *testing.T) {
	if NewAbortWatch(abortExp(time.Second), "s") != nil {
		t.Fatal("a watch without conditions")
	}
	w := NewAbortWatch(abortExp(time.Second, experiments.Abort{Metric: "error_ratio", Op: ">", Value: 0.5, Window: time.Second}), "s")
	if w.Every() != 50*time.Millisecond || w.Due() != time.Second {
		t.Fatalf("every %v, due %v: want slices of 50 ms, first judged at 1 s", w.Every(), w.Due())
	}
	// 0.0-1.0 s: one success every 10 ms. 1.0-1.6 s: failures, added
	// out of order.
	for i := range 100 {
		w.Add(Outcome{SentAt: time.Duration(i) * 10 * time.Millisecond, Latency: 5 * time.Millisecond, Success: true})
	}
	if a := w.Judge(999 * time.Millisecond); a != nil {
		t.Fatalf("judged before a whole window: %+v", a)
	}
	if a := w.Judge(time.Second); a != nil {
		t.Fatalf("tripped on successes: %+v", a)
	}
	for i := 59; i >= 0; i-- {
		w.Add(Outcome{SentAt: time.Second + time.Duration(i)*10*time.Millisecond, Latency: time.Millisecond})
	}
	// At 1.5 s the window [0.5, 1.5) holds 50 successes, 50 failures.
	if a := w.Judge(1500 * time.Millisecond); a != nil {
		t.Fatalf("tripped at an error ratio of 0.5: %+v", a)
	}
	if w.Judge(1520*time.Millisecond) != nil || w.Due() != 1550*time.Millisecond {
		t.Fatalf("judged within a slice, or next due %v, want 1.55 s", w.Due())
	}
	a := w.Judge(1550 * time.Millisecond)
	if a == nil {
		t.Fatal("no trip at 1.55 s")
	}
	if a.AtS != 1.55 || a.Requests != 100 || math.Abs(a.Value-0.55) > 1e-9 || a.Strategy != "s" || a.WindowS != 1 {
		t.Errorf("abort %+v, want 55 of 100 failed at 1.55 s", a)
	}
	// Long after: the window is empty, nothing trips.
	if a := w.Judge(10 * time.Second); a != nil {
		t.Errorf("tripped on an empty window: %+v", a)
	}
}

// TestAbortWatchMetrics: each metric over a window, as the summary
// defines it over a whole attack.
func TestAbortWatchMetrics(t *testing.T) {
	// 100 results in [0, 1 s): 80 successes of 10 ms, 10 slow failures
	// of 300 ms, 10 timeouts of 1 s (slow threshold 200 ms).
	outcomes := func(add func(Outcome)) {
		for i := range 80 {
			add(Outcome{SentAt: time.Duration(i) * 5 * time.Millisecond, Latency: 10 * time.Millisecond, Success: true})
		}
		for range 10 {
			add(Outcome{SentAt: 100 * time.Millisecond, Latency: 300 * time.Millisecond})
			add(Outcome{SentAt: 0, Latency: 999 * time.Millisecond, Timeout: true})
		}
	}
	for _, tc := range []struct {
		metric string
		want   float64
	}{
		{"error_ratio", 0.2}, {"success_ratio", 0.8}, {"timeout_ratio", 0.1}, {"slow_ratio", 0.2},
		{"bad_ratio", 0.3}, {"mean_ms", (80*10 + 10*300 + 10*999) / 100.0},
		{"p50_ms", 10}, {"p90_ms", 300}, {"p99_ms", 999}, {"p999_ms", 999}, {"max_ms", 999},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			w := NewAbortWatch(abortExp(200*time.Millisecond, experiments.Abort{Metric: tc.metric, Op: ">=", Value: 0, Window: time.Second}), "s")
			outcomes(w.Add)
			a := w.Judge(time.Second)
			if a == nil || a.Requests != 100 || math.Abs(a.Value-tc.want) > 0.001*tc.want+1e-9 {
				t.Errorf("%s = %+v, want %v over 100 results", tc.metric, a, tc.want)
			}
		})
	}
}

package reports

import (
	"strings"
	"testing"
)

// fastFailTimeline is one strategy's timeline of a black hole: instance 0
// fails every request fast and gets most of the traffic, instance 1
// succeeds slowly.
func fastFailSummary(withOK bool) *Summary {
	in0 := InstanceSeries{ID: 0, Requests: []int64{800, 900}, Errors: []int64{800, 900}, P50Ms: []float64{1, 1}, P99Ms: []float64{1.2, 1.2}}
	in1 := InstanceSeries{ID: 1, Requests: []int64{200, 100}, Errors: []int64{0, 0}, P50Ms: []float64{40, 40}, P99Ms: []float64{60, 60}}
	if withOK {
		in0.P50OkMs, in0.P99OkMs = []float64{0, 0}, []float64{0, 0}
		in1.P50OkMs, in1.P99OkMs = []float64{40, 40}, []float64{60, 60}
	}
	return &Summary{
		DurationS: 2, SlowThresholdMs: 1000, FaultyInstances: []int{0},
		Faults: []FaultWindow{{Instance: 0, Mode: "fail", StartS: 0, EndS: 2}},
		Strategies: []Strategy{{
			Name:      "least-inflight",
			Instances: []Instance{{ID: 0, Faulty: true}, {ID: 1}},
			Timeline:  &Timeline{BucketS: 1, Instances: []InstanceSeries{in0, in1}},
		}},
	}
}

func legendLabels(f *figure) string {
	var ls []string
	for _, e := range f.key.entries {
		ls = append(ls, e.label)
	}
	return strings.Join(ls, "\n")
}

func TestWholeRunFaultNamedOnce(t *testing.T) {
	s := fastFailSummary(true)
	ts := newTimeSeries(s, &s.Strategies[0])
	if len(ts.windows) != 0 {
		t.Errorf("whole-run fault shaded: windows %v", ts.windows)
	}
	f := errorFigure(s, &s.Strategies[0])
	if got := legendLabels(f); !strings.Contains(got, "instance 0: fail for the whole run") {
		t.Errorf("legend does not name the whole-run fault:\n%s", got)
	}

	// A fault of part of the run is shaded.
	s.Faults[0].EndS = 1
	if ts := newTimeSeries(s, &s.Strategies[0]); len(ts.windows) != 1 || len(ts.wholeRun) != 0 {
		t.Errorf("partial fault: windows %v, whole run %v", ts.windows, ts.wholeRun)
	}
}

// TestErrorFigureShowsFailuresPerSecond checks that the error plot's
// main panel counts failed requests per second, where the black hole
// stands out (900/s against 0), with the ratio below it.
func TestErrorFigureShowsFailuresPerSecond(t *testing.T) {
	s := fastFailSummary(true)
	f := errorFigure(s, &s.Strategies[0])
	if len(f.panels) != 2 {
		t.Fatalf("%d panels, want 2", len(f.panels))
	}
	if got := f.panels[0].Title.Text; !strings.Contains(got, "failed requests per second") {
		t.Errorf("first panel %q, want failed requests per second", got)
	}
	if got := f.panels[1].Title.Text; !strings.Contains(got, "error rate") {
		t.Errorf("second panel %q, want the error rate", got)
	}
	if max := f.panels[0].Y.Max; max < 900 {
		t.Errorf("failed requests axis tops at %v, want at least 900/s", max)
	}
}

// TestLatencyFigureOfSuccessfulRequests checks that the fast-failing
// instance's latency does not stretch the axis (it had no success; its
// seconds get crosses instead), and that the titles say whose latency it
// is.
func TestLatencyFigureOfSuccessfulRequests(t *testing.T) {
	s := fastFailSummary(true)
	f := latencyFigure(s, &s.Strategies[0])
	for _, p := range f.panels {
		if !strings.Contains(p.Title.Text, "of successful requests") {
			t.Errorf("title %q does not say successful requests", p.Title.Text)
		}
		// The axis spans the successful latencies (40-60 ms), not the
		// failures' 1 ms.
		if p.Y.Min < 10 || p.Y.Max < 60 {
			t.Errorf("panel %q spans %v to %v ms, want the successes' 40-60 ms", p.Title.Text, p.Y.Min, p.Y.Max)
		}
	}
	if got := legendLabels(f); !strings.Contains(got, "every request of the second failed") {
		t.Errorf("legend lacks the crosses:\n%s", got)
	}

	// A summary written before the split: every request's latency, so titled.
	s = fastFailSummary(false)
	f = latencyFigure(s, &s.Strategies[0])
	if got := f.panels[0].Title.Text; !strings.Contains(got, "every request, failed ones included") {
		t.Errorf("title %q of a summary without the split", got)
	}
}

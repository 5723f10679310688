package reports

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
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
	for i, p := range f.panels {
		if !strings.Contains(p.Title.Text, "of successful requests") {
			t.Errorf("title %q does not say successful requests", p.Title.Text)
		}
		// Each axis spans its successful latencies (p99 60 ms, p50 40
		// ms), not the failures' 1 ms.
		v := []float64{60, 40}[i]
		if p.Y.Min < 10 || p.Y.Min > v || p.Y.Max < v {
			t.Errorf("panel %q spans %v to %v ms, want the successes' %v ms", p.Title.Text, p.Y.Min, p.Y.Max, v)
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

// TestLatencyAtAllFailed checks which buckets a latency panel draws: a
// second in which every request of an instance failed is marked failed
// and has no latency, whether the latencies are of the successful
// requests (split) or of every request, a timeout's or a fast failure's.
func TestLatencyAtAllFailed(t *testing.T) {
	type got struct {
		v          float64
		ok, failed bool
	}
	for _, tc := range []struct {
		name  string
		in    InstanceSeries
		vals  []float64
		split bool
		want  []got
	}{
		{"fast failures, every request", InstanceSeries{Requests: []int64{5, 5, 0}, Errors: []int64{5, 2, 0}},
			[]float64{1.2, 40, 0}, false, []got{{0, false, true}, {40, true, false}, {0, false, false}}},
		{"timeouts, every request", InstanceSeries{Requests: []int64{5}, Errors: []int64{5}},
			[]float64{30000}, false, []got{{0, false, true}}},
		{"successful requests", InstanceSeries{Requests: []int64{5, 5, 0}, Errors: []int64{5, 2, 0}},
			[]float64{0, 40, 0}, true, []got{{0, false, true}, {40, true, false}, {0, false, false}}},
		{"no latency recorded", InstanceSeries{Requests: []int64{5}, Errors: []int64{0}},
			nil, false, []got{{0, false, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, w := range tc.want {
				v, ok, failed := latencyAt(tc.in, tc.vals, tc.split, k)
				if (got{v, ok, failed}) != w {
					t.Errorf("bucket %d: %v %v %v, want %+v", k, v, ok, failed, w)
				}
			}
		})
	}
}

// TestLatencyFigureDrawsNoFailedLatency checks that the latency of a
// second in which every request failed is nowhere on the axes: a black
// hole's 1 ms failures and a dead instance's 30 s timeouts leave the axes
// to the successes' 40-60 ms.
func TestLatencyFigureDrawsNoFailedLatency(t *testing.T) {
	for _, tc := range []struct {
		name  string
		split bool
		p99   float64 // of instance 0, whose requests all fail
	}{
		{"fast failures, summary without the split", false, 1.2},
		{"timeouts, summary without the split", false, 30000},
		{"timeouts, split", true, 30000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fastFailSummary(tc.split)
			in0 := &s.Strategies[0].Timeline.Instances[0]
			in0.P50Ms, in0.P99Ms = []float64{tc.p99, tc.p99}, []float64{tc.p99, tc.p99}
			f := latencyFigure(s, &s.Strategies[0])
			for _, p := range f.panels {
				if p.Y.Min < 10 || p.Y.Max > 200 {
					t.Errorf("panel %q spans %v to %v ms, want the successes' 40-60 ms only", p.Title.Text, p.Y.Min, p.Y.Max)
				}
			}
			if got := legendLabels(f); !strings.Contains(got, "every request of the second failed") {
				t.Errorf("legend lacks the failed seconds' mark:\n%s", got)
			}
		})
	}
}

// TestLatencyPanelsFitTheirData renders the latency figure of a strategy
// whose p99 reaches seconds while its p50 stays near 10 ms: each panel's
// axis spans its own values, and its tick labels carry units and stand
// apart on the panel as drawn.
func TestLatencyPanelsFitTheirData(t *testing.T) {
	in := func(id int, p50, p99 []float64) InstanceSeries {
		n := len(p50)
		req, errs := make([]int64, n), make([]int64, n)
		for k := range req {
			req[k] = 100
		}
		return InstanceSeries{ID: id, Requests: req, Errors: errs, P50Ms: p50, P99Ms: p99}
	}
	s := &Summary{DurationS: 4, SlowThresholdMs: 1000, Strategies: []Strategy{{Name: "p2c", Timeline: &Timeline{BucketS: 1, Instances: []InstanceSeries{
		in(0, []float64{10, 11, 10.5, 12}, []float64{2, 900, 30000, 2500}),
		in(1, []float64{10.2, 10.4, 10.1, 10.3}, []float64{15, 1200, 20000, 3000}),
	}}}}}
	f := latencyFigure(s, &s.Strategies[0])
	if p99 := f.panels[0]; p99.Y.Min > 2 || p99.Y.Max < 30000 {
		t.Errorf("p99 panel spans %v to %v ms, want 2 ms to 30 s", p99.Y.Min, p99.Y.Max)
	}
	if p50 := f.panels[1]; p50.Y.Min < 5 || p50.Y.Max > 20 {
		t.Errorf("p50 panel spans %v to %v ms, want about 10 to 12 ms, not the p99's seconds", p50.Y.Min, p50.Y.Max)
	}
	_, c := renderImage(f)
	panels, _ := f.layout(c)
	for i, p := range f.panels {
		h := p.DataCanvas(panels[i]).Size().Y
		at := func(v float64) vg.Length {
			return h * vg.Length(math.Log(v/p.Y.Min)/math.Log(p.Y.Max/p.Y.Min))
		}
		var labelled []plot.Tick
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			if tk.Label != "" {
				labelled = append(labelled, tk)
			}
		}
		if len(labelled) < 3 {
			t.Errorf("panel %d: labels %v, want at least three", i, labelled)
		}
		for j, tk := range labelled {
			if !strings.HasSuffix(tk.Label, " ms") && !strings.HasSuffix(tk.Label, " s") {
				t.Errorf("panel %d: label %q has no unit", i, tk.Label)
			}
			if tk.Value >= 1000 && !strings.HasSuffix(tk.Label, " s") {
				t.Errorf("panel %d: label %q of %v ms not in seconds", i, tk.Label, tk.Value)
			}
			if j > 0 {
				if gap := at(tk.Value) - at(labelled[j-1].Value); gap < vg.Points(15) {
					t.Errorf("panel %d: labels %q and %q %.1f pt apart, overlapping", i, labelled[j-1].Label, tk.Label, gap.Points())
				}
			}
		}
	}
}

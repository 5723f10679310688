package reports

import (
	"fmt"
	"strconv"
)

// Abort is the abort condition (the experiment file's abort) that ended a
// run early: the metric it judged over a sliding window of results, what
// that window measured when it tripped, in which strategy's attack and
// when. The load stopped there, every fault was healed, and the
// strategies not yet run were skipped.
type Abort struct {
	Metric    string  `json:"metric"`    // the metric judged, as the experiment file names it, e.g. "error_ratio"
	Op        string  `json:"op"`        // the comparison: "<", "<=", ">" or ">="
	Threshold float64 `json:"threshold"` // the number the metric was compared with (a ratio in [0, 1], a latency in ms)
	WindowS   float64 `json:"window_s"`  // the window the metric was computed over: results that ended in the last window_s seconds
	Value     float64 `json:"value"`     // the metric over that window when the condition tripped
	Requests  int64   `json:"requests"`  // the results in that window
	Strategy  string  `json:"strategy"`  // the strategy whose attack it stopped
	AtS       float64 `json:"at_s"`      // when it tripped, in seconds since that strategy's attack started
	// Skipped lists the strategies that were not run because of it, in the
	// experiment file's order; absent when it stopped the last one.
	Skipped []string `json:"skipped,omitempty"`
}

// Condition is the condition as written, e.g. "error_ratio > 0.5".
func (a *Abort) Condition() string {
	return a.Metric + " " + a.Op + " " + strconv.FormatFloat(a.Threshold, 'g', -1, 64)
}

// Text says what tripped, where and when, e.g. "error_ratio 0.97 > 0.5
// over 10s in least-inflight at 12.0s".
func (a *Abort) Text() string {
	return fmt.Sprintf("%s %s %s %s over %ss in %s at %.1fs", a.Metric, strconv.FormatFloat(a.Value, 'g', 3, 64), a.Op,
		strconv.FormatFloat(a.Threshold, 'g', -1, 64), strconv.FormatFloat(a.WindowS, 'g', -1, 64), a.Strategy, a.AtS)
}

// abortBanner is the line that opens the report of an aborted run; ""
// when the run was not aborted.
func abortBanner(s *Summary) string {
	a := s.Abort
	if a == nil {
		return ""
	}
	text := "ABORTED: " + a.Text() + "; the load stopped and every fault was healed"
	switch n := len(a.Skipped); n {
	case 0:
	case 1:
		text += "; 1 strategy not run"
	default:
		text += fmt.Sprintf("; %d strategies not run", n)
	}
	return text + "."
}

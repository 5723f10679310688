package experiments

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/reports"
)

// Abort is a condition that ends a run early: when Metric, computed over
// the results that ended in the last Window of a strategy's attack,
// compares with Value by Op (e.g. error_ratio > 0.5 over 10s), the load
// stops, every fault is healed, and the strategies not yet run are
// skipped. It is written as an expectation is, with the same metric names
// and thresholds, plus the window:
//
//	abort: [{error_ratio: "> 50%", window: 10s}]
//
// A condition is first judged once a whole window has passed since the
// attack started, then every twentieth of a window.
type Abort struct {
	Metric string  // one of AbortMetrics()
	Op     string  // one of Ops()
	Value  float64 // finite; a ratio within [0, 1]
	Window time.Duration
}

// Holds reports whether got, the metric over a window, trips the
// condition; false for a NaN got (an empty window).
func (a Abort) Holds(got float64) bool {
	return Expectation{Op: a.Op, Value: a.Value}.Holds(got)
}

// String returns the condition as a sentence of a report, e.g.
// "error_ratio > 0.5 over 10s".
func (a Abort) String() string {
	return a.Metric + " " + a.Op + " " + strconv.FormatFloat(a.Value, 'g', -1, 64) + " over " + a.Window.String()
}

// abortMetrics are the metrics a window of results gives: the shares of
// requests and the latency of every request, as reports' metric table
// defines them over a whole attack.
var abortMetrics = []string{
	"error_ratio", "timeout_ratio", "slow_ratio", "bad_ratio", "success_ratio",
	"mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms",
}

// AbortMetrics returns the metrics an abort condition may name.
func AbortMetrics() []string { return slices.Clone(abortMetrics) }

// parseAborts decodes abort, a sequence of conditions (or nothing), and
// returns every entry's problem at once.
func parseAborts(n *yaml.Node) ([]Abort, error) {
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fieldErr("abort", `want a list like [{error_ratio: "> 50%%", window: 10s}], got a %s`, nodeKind(n))
	}
	var as []Abort
	var errs []error
	for i, item := range n.Content {
		a, err := parseAbort(fmt.Sprintf("abort[%d]", i), item)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		as = append(as, a)
	}
	return as, errors.Join(errs...)
}

// parseAbort decodes one entry of abort: a mapping of exactly one metric,
// whose value is a threshold as expect writes it, and window.
func parseAbort(field string, n *yaml.Node) (Abort, error) {
	var a Abort
	if n.Kind != yaml.MappingNode {
		return a, fieldErr(field, `want a mapping like {error_ratio: "> 50%%", window: 10s}, got a %s`, nodeKind(n))
	}
	hasWindow := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch {
		case key == "window":
			if hasWindow {
				return a, fieldErr(field+".window", "is given twice")
			}
			hasWindow = true
			if val.Kind != yaml.ScalarNode {
				return a, fieldErr(field+".window", `want a duration like "10s", got a %s`, nodeKind(val))
			}
			d, err := duration(field+".window", val.Value, 0)
			if err != nil {
				return a, err
			}
			a.Window = d
		case slices.Contains(abortMetrics, key):
			var err error
			if a.Op, a.Value, err = metricCondition(field, a.Metric, key, val); err != nil {
				return a, err
			}
			a.Metric = key
		case key == "strategy":
			return a, fieldErr(field+".strategy", "abort applies to every strategy; leave strategy out")
		default:
			return a, fieldErr(field+"."+key, "%s; abort judges a metric over a window of results: one of %s", notWindowed(key), strings.Join(abortMetrics, ", "))
		}
	}
	switch {
	case a.Metric == "":
		return a, fieldErr(field, "names no metric; add one of %s", strings.Join(abortMetrics, ", "))
	case !hasWindow:
		return a, fieldErr(field+".window", `is required: how far back the metric looks, e.g. window: 10s`)
	}
	return a, nil
}

// notWindowed says why key is no metric of abort.
func notWindowed(key string) string {
	if slices.Contains(reports.Metrics(), key) {
		return "is a metric of a whole attack, which a window of results does not give"
	}
	return "unknown metric"
}

// validateAborts checks each abort condition's metric, threshold and
// window; a window longer than the run could never be judged.
func (e *Experiment) validateAborts() error {
	var errs []error
	for i, a := range e.Abort {
		name := fmt.Sprintf("abort[%d]", i)
		switch {
		case !slices.Contains(abortMetrics, a.Metric):
			errs = append(errs, fieldErr(name, "unknown metric %q (abort takes %s)", a.Metric, strings.Join(abortMetrics, ", ")))
			continue
		case a.Window <= 0:
			errs = append(errs, fieldErr(name+".window", "must be > 0, e.g. 10s; got %v", a.Window))
		case a.Window >= e.Duration:
			errs = append(errs, fieldErr(name+".window", "%v is not shorter than the run (duration %v): the condition is judged only once a whole window has passed, before the run ends", a.Window, e.Duration))
		}
		if _, _, err := ParseThreshold(a.Metric, a.Op+" "+strconv.FormatFloat(a.Value, 'g', -1, 64)); err != nil {
			errs = append(errs, fieldErr(name+"."+a.Metric, "%v", err))
		}
	}
	return errors.Join(errs...)
}

package experiments

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/reports"
)

// Expectation is a claim about one strategy's outcome: its Metric compared
// with Value by Op holds, e.g. error_ratio < 0.005.
type Expectation struct {
	Strategy string  // a strategy spec exactly as in the file's strategies
	Metric   string  // one of reports.Metrics()
	Op       string  // one of Ops()
	Value    float64 // finite
}

// Holds reports whether got satisfies the expectation's comparison. It is
// false for an unknown Op and for a NaN got.
func (x Expectation) Holds(got float64) bool {
	switch x.Op {
	case "<":
		return got < x.Value
	case "<=":
		return got <= x.Value
	case ">":
		return got > x.Value
	case ">=":
		return got >= x.Value
	}
	return false
}

// String returns the comparison as an experiment file writes it, e.g.
// "error_ratio < 0.005".
func (x Expectation) String() string {
	return x.Metric + " " + x.Op + " " + strconv.FormatFloat(x.Value, 'g', -1, 64)
}

// ops are the comparisons of Ops(); two-character ones first, for parsing.
var ops = []string{"<=", ">=", "<", ">"}

// Ops returns the comparisons an expectation can use.
func Ops() []string { return []string{"<", "<=", ">", ">="} }

// parseExpectations decodes expect, a sequence of expectations (or nothing).
func parseExpectations(n *yaml.Node, strategies []string) ([]Expectation, error) {
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fieldErr("expect", `want a list like [{strategy: round-robin, error_ratio: "< 0.01"}], got a %s`, nodeKind(n))
	}
	var xs []Expectation
	for i, item := range n.Content {
		x, err := parseExpectation(fmt.Sprintf("expect[%d]", i), item, strategies)
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// parseExpectation decodes one entry of expect: a mapping of strategy and
// exactly one metric whose value is a condition "OP NUMBER". strategies are
// the file's; the entry must name one of them.
func parseExpectation(field string, n *yaml.Node, strategies []string) (Expectation, error) {
	var x Expectation
	if n.Kind != yaml.MappingNode {
		return x, fieldErr(field, `want a mapping like {strategy: round-robin, error_ratio: "< 0.01"}`)
	}
	hasStrategy := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch {
		case key == "strategy":
			if hasStrategy {
				return x, fieldErr(field+".strategy", "is given twice")
			}
			if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
				return x, fieldErr(field+".strategy", "want one of the file's strategies (%s)", quoteAll(strategies))
			}
			x.Strategy, hasStrategy = val.Value, true
		case slices.Contains(reports.Metrics(), key):
			var err error
			if x.Op, x.Value, err = metricCondition(field, x.Metric, key, val); err != nil {
				return x, err
			}
			x.Metric = key
		default:
			return x, fieldErr(field+"."+key, "unknown metric (known: %s)", strings.Join(reports.Metrics(), ", "))
		}
	}
	switch {
	case !hasStrategy:
		return x, fieldErr(field+".strategy", "is required: one of the file's strategies (%s)", quoteAll(strategies))
	case !slices.Contains(strategies, x.Strategy):
		return x, fieldErr(field+".strategy", "%q is not one of the file's strategies (%s)", x.Strategy, quoteAll(strategies))
	case x.Metric == "":
		return x, fieldErr(field, "names no metric; add one of %s", strings.Join(reports.Metrics(), ", "))
	}
	return x, nil
}

// metricCondition reads the condition val on metric key of the entry
// field, whose metric so far is had ("" for none): an entry names one
// metric, its value is a threshold (ParseThreshold).
func metricCondition(field, had, key string, val *yaml.Node) (op string, v float64, err error) {
	switch {
	case had != "":
		return "", 0, fieldErr(field, "names two metrics, %s and %s; write one entry per metric", had, key)
	case val.Kind != yaml.ScalarNode:
		return "", 0, fieldErr(field+"."+key, `want "OP NUMBER" like %q, got a %s`, conditionExample(key), nodeKind(val))
	}
	if op, v, err = ParseThreshold(key, val.Value); err != nil {
		return "", 0, fieldErr(field+"."+key, "%v", err)
	}
	return op, v, nil
}

// parseCondition parses "OP NUMBER", e.g. "< 0.005" or ">=3"; the number
// must be finite. A number may end in "%", which divides it by 100.
func parseCondition(s string) (op string, v float64, ok bool) {
	op, v, _, ok = parseConditionPct(s)
	return op, v, ok
}

func parseConditionPct(s string) (op string, v float64, pct, ok bool) {
	s = strings.TrimSpace(s)
	for _, op := range ops {
		if rest, found := strings.CutPrefix(s, op); found {
			rest = strings.TrimSpace(rest)
			rest, pct = strings.CutSuffix(rest, "%")
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return "", 0, false, false
			}
			if pct {
				v /= 100
			}
			return op, v, pct, true
		}
	}
	return "", 0, false, false
}

// ParseThreshold parses a threshold on metric as expect and abort write
// it: "OP NUMBER", e.g. "< 0.005", ">= 3". A ratio may be written as a
// percentage, "< 0.5%" (the terminal's and the report's percent columns
// show ratios that way); without "%" it must be within [0, 1], so "< 5"
// on a ratio, which every run would pass, is refused with the fix. Only a
// ratio takes "%". The error does not name the field; callers add it.
func ParseThreshold(metric, s string) (op string, v float64, err error) {
	op, v, pct, ok := parseConditionPct(s)
	if !ok {
		return "", 0, fmt.Errorf(`want "OP NUMBER" like %q, got %q`, conditionExample(metric), s)
	}
	m, _ := reports.LookupMetric(metric)
	switch {
	case pct && m.Kind != reports.KindRatio:
		return "", 0, fmt.Errorf("%q: %s is not a ratio and takes no %%; write a number like %q", s, metric, conditionExample(metric))
	case m.Kind == reports.KindRatio && v < 0 && !pct:
		return "", 0, fmt.Errorf("%q: %s is a ratio between 0 and 1; a negative one holds for every run or none", s, metric)
	case m.Kind == reports.KindRatio && (v < 0 || v > 1) && pct:
		return "", 0, fmt.Errorf("%q: %s is a ratio, so a percentage must be within 0%% and 100%%", s, metric)
	case m.Kind == reports.KindRatio && (v < 0 || v > 1):
		return "", 0, fmt.Errorf("%q: %s is a ratio between 0 and 1, and %v is outside it; write %q for %v percent, or %q", s, metric,
			v, op+" "+strconv.FormatFloat(v, 'g', -1, 64)+"%", v, op+" "+strconv.FormatFloat(v/100, 'g', -1, 64))
	}
	return op, v, nil
}

// conditionExample is a condition on metric to quote in an error message,
// by the metric's kind in reports' metric table.
func conditionExample(metric string) string {
	m, _ := reports.LookupMetric(metric)
	switch m.Kind {
	case reports.KindRatio:
		return "> 5%"
	case reports.KindMilliseconds:
		return "< 100"
	}
	return ">= 1"
}

// nodeKind names what n holds, for messages: "mapping", "sequence",
// "alias", or a scalar's value.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.AliasNode:
		return "alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("value %q", n.Value)
	}
	return "document"
}

// quoteAll quotes each of ss as a Go string and joins them with ", ".
func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

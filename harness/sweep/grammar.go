// Package sweep runs an experiment at every point of a parameter grid —
// a numeric range, a list, a strategy's parameters, and their product —
// and gathers each strategy's key figures per point (sweep.json,
// sweep.csv, sweep.md), with the knee of a sweep over the rate: the
// highest rate whose key metric stays within a bound.
package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A Dim is one varied parameter and the values it takes, in order.
type Dim struct {
	// Name is the experiment setting (rate, timeout, faults, ...) or, in
	// a strategy template, the strategy parameter it fills.
	Name   string
	Values []string
	// InTemplate marks a strategy parameter: its values fill the
	// template's slot of that name, not a setting of the experiment.
	InTemplate bool
	// Arg is the --vary that gave the dimension, for messages.
	Arg string
}

// Template is a strategy spec with slots, e.g.
// "least-inflight+eject(consecutive={1,3},duration={1s,5s})": each point
// runs the spec with its slots filled in. Parts alternate text and slot
// names: Parts[0] text, Parts[1] a slot, Parts[2] text, ...
type Template struct {
	Text  string
	Parts []string
}

// Fill returns the spec with each slot given its value in vals.
func (t *Template) Fill(vals map[string]string) string {
	var b strings.Builder
	for i, p := range t.Parts {
		if i%2 == 0 {
			b.WriteString(p)
		} else {
			b.WriteString(vals[p])
		}
	}
	return b.String()
}

// Settings are the experiment settings a sweep can vary, with the kind of
// value each takes.
var Settings = map[string]kind{
	"rate":               kindPositive,
	"duration":           kindSpan,
	"timeout":            kindSpan,
	"cross_zone_latency": kindDuration,
	"instances":          kindCount,
	"workers":            kindWhole,
	"replicas":           kindCount,
	"seed":               kindWhole,
	"faults":             kindOnOff,
}

type kind int

const (
	kindPositive kind = iota // a number > 0
	kindSpan                 // a duration > 0, e.g. 10s
	kindDuration             // a duration >= 0, e.g. 250ms
	kindCount                // a whole number >= 1
	kindWhole                // a whole number >= 0 (workers: 0 = unlimited)
	kindOnOff                // on or off
	kindAny                  // a strategy parameter: checked by the strategy
)

// SettingNames lists Settings' names, for messages.
func SettingNames() string {
	return "rate, duration, timeout, cross_zone_latency, instances, workers, replicas, seed, faults"
}

// ParseVary parses one --vary: "NAME=VALUES" for an experiment setting,
// where VALUES is a list ("a,b,c") or a range ("FROM..TO:N", N values
// evenly spaced, ends included), or a strategy spec whose parameters may
// hold such values in braces ("p2c+eject(consecutive={1,3,5})"). It
// returns the dimensions it adds, and the template for a strategy spec.
func ParseVary(s string) ([]Dim, *Template, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil, fmt.Errorf("--vary: empty; want NAME=VALUES (NAME one of %s) or a strategy with {values} in its parameters", SettingNames())
	}
	name, vals, isSetting := strings.Cut(s, "=")
	if name = strings.TrimSpace(name); isSetting && isWord(name) {
		k, ok := Settings[name]
		if !ok {
			return nil, nil, fmt.Errorf("--vary %s: unknown setting %q (one of %s; a strategy parameter goes in braces: 'p2c+eject(consecutive={1,3})')", s, name, SettingNames())
		}
		values, err := parseValues(vals, k)
		if err != nil {
			return nil, nil, fmt.Errorf("--vary %s: %w", s, err)
		}
		return []Dim{{Name: name, Values: values, Arg: s}}, nil, nil
	}
	return parseTemplate(s)
}

// parseTemplate parses a strategy spec with {values} slots; each slot is
// the value of a parameter ("consecutive={1,3}") and is named after it.
func parseTemplate(s string) ([]Dim, *Template, error) {
	t := &Template{Text: s}
	var dims []Dim
	rest, text := s, ""
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, nil, fmt.Errorf("--vary %s: a '}' without its '{'", s)
			}
			t.Parts = append(t.Parts, text+rest)
			break
		}
		before := rest[:open]
		if strings.IndexByte(before, '}') >= 0 {
			return nil, nil, fmt.Errorf("--vary %s: a '}' without its '{'", s)
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, nil, fmt.Errorf("--vary %s: a '{' without its '}'", s)
		}
		inner := rest[open+1 : open+end]
		lead := strings.TrimRight(before, " ") // "consecutive = {1,3}" too
		eq := strings.LastIndexByte(lead, '=')
		param := ""
		if eq >= 0 && eq == len(lead)-1 {
			start := strings.LastIndexAny(lead[:eq], "(,") + 1
			param = strings.TrimSpace(lead[start:eq])
		}
		if !isWord(param) {
			return nil, nil, fmt.Errorf("--vary %s: {%s} must be a parameter's value, as in eject(consecutive={1,3})", s, inner)
		}
		for _, d := range dims {
			if d.Name == param {
				return nil, nil, fmt.Errorf("--vary %s: parameter %s is varied twice", s, param)
			}
		}
		values, err := parseValues(inner, kindAny)
		if err != nil {
			return nil, nil, fmt.Errorf("--vary %s: %s={%s}: %w", s, param, inner, err)
		}
		dims = append(dims, Dim{Name: param, Values: values, InTemplate: true, Arg: s})
		t.Parts = append(t.Parts, text+before, param)
		text, rest = "", rest[open+end+1:]
	}
	if len(dims) == 0 {
		return nil, nil, fmt.Errorf("--vary %s: neither NAME=VALUES (NAME one of %s) nor a strategy with {values} in its parameters", s, SettingNames())
	}
	return dims, t, nil
}

// parseValues parses a list or a range of values of kind k.
func parseValues(s string, k kind) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("no values; want a list (a,b,c) or a range (FROM..TO:N)")
	}
	var values []string
	if from, rest, ok := strings.Cut(s, ".."); ok {
		to, n, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, fmt.Errorf("range %q needs its number of values: FROM..TO:N, e.g. 1000..8000:8", s)
		}
		var err error
		if values, err = parseRange(strings.TrimSpace(from), strings.TrimSpace(to), strings.TrimSpace(n), k); err != nil {
			return nil, fmt.Errorf("range %q: %w", s, err)
		}
	} else {
		for _, v := range strings.Split(s, ",") {
			values = append(values, strings.TrimSpace(v))
		}
	}
	seen := map[string]string{}
	for _, v := range values {
		if err := check(v, k); err != nil {
			return nil, err
		}
		key := sameKey(v, k)
		if first, ok := seen[key]; ok {
			if first == v {
				return nil, fmt.Errorf("value %q is listed twice", v)
			}
			return nil, fmt.Errorf("values %q and %q are the same value; list each once", first, v)
		}
		seen[key] = v
	}
	return values, nil
}

// sameKey is what two values of kind k share when they are the same value
// however written: 1000 and 1e3, 1s and 1000ms, 01 and 1.
func sameKey(v string, k kind) string {
	switch k {
	case kindOnOff:
		return v
	case kindSpan, kindDuration:
		d, _ := time.ParseDuration(v) // checked
		return "d " + strconv.FormatInt(int64(d), 10)
	}
	if x, dur, err := number(v); err == nil {
		return fmt.Sprintf("%t %v", dur, x)
	}
	return v
}

// maxValues bounds the values of one dimension.
const maxValues = 1000

// parseRange returns n values evenly spaced from from to to, ends
// included: numbers, or durations when to is one (a unit on TO alone
// applies to FROM too: 0..2s is 0s..2s). A number keeps 12 significant
// digits: 0.1..0.5:3 is 0.1, 0.3, 0.5.
func parseRange(from, to, count string, k kind) ([]string, error) {
	n, err := strconv.Atoi(count)
	if err != nil || n < 2 || n > maxValues {
		return nil, fmt.Errorf("N must be a whole number within [2, %d], got %q", maxValues, count)
	}
	if k == kindOnOff {
		return nil, fmt.Errorf("takes on or off, not a range")
	}
	if unit := durationUnit(to); unit != "" && k != kindPositive && k != kindCount && k != kindWhole {
		if _, err := strconv.ParseFloat(from, 64); err == nil {
			from += unit
		}
	}
	a, aDur, errA := number(from)
	b, bDur, errB := number(to)
	switch {
	case errA != nil:
		return nil, fmt.Errorf("FROM %q: %w", from, errA)
	case errB != nil:
		return nil, fmt.Errorf("TO %q: %w", to, errB)
	case aDur != bDur:
		return nil, fmt.Errorf("FROM and TO must both be durations or both numbers (a unit on TO alone applies to both: 0..2s:3)")
	case a >= b:
		return nil, fmt.Errorf("FROM must be below TO")
	}
	out := make([]string, n)
	for i := range out {
		x := a + (b-a)*float64(i)/float64(n-1)
		switch {
		case aDur:
			out[i] = time.Duration(math.Round(x)).String()
		case k == kindCount || k == kindWhole:
			if math.Abs(x-math.Round(x)) > 1e-9 {
				return nil, fmt.Errorf("%d values from %s to %s are not whole numbers (%s); choose N so that the step is whole", n, from, to, FormatNumber(x))
			}
			out[i] = strconv.FormatInt(int64(math.Round(x)), 10)
		default:
			out[i] = FormatNumber(x)
		}
	}
	return out, nil
}

// FormatNumber writes x with at most 12 significant digits and no
// exponent: 0.30000000000000004 is 0.3, 1e6 is 1000000.
func FormatNumber(x float64) string {
	if r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64); err == nil {
		x = r
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// durationUnit is the unit at the end of a duration ("s" of "2s", "ms" of
// "1.5ms"); "" when s is no duration with a unit.
func durationUnit(s string) string {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return ""
	}
	if _, err := time.ParseDuration(s); err != nil {
		return ""
	}
	return s[strings.LastIndexAny(s, "0123456789.")+1:]
}

// number parses a number, or a duration (in nanoseconds, dur true).
func number(s string) (v float64, dur bool, err error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f, false, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("not a number or a duration")
	}
	return float64(d), true, nil
}

// check checks one value of kind k.
func check(v string, k kind) error {
	if v == "" {
		return fmt.Errorf("an empty value")
	}
	switch k {
	case kindPositive:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%q: want a number > 0", v)
		}
	case kindSpan:
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("%q: want a duration > 0, e.g. 10s", v)
		}
	case kindDuration:
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Errorf("%q: want a duration >= 0, e.g. 250ms", v)
		}
	case kindCount:
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("%q: want a whole number >= 1", v)
		}
	case kindWhole:
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n > math.MaxInt32 {
			return fmt.Errorf("%q: want a whole number >= 0", v)
		}
	case kindOnOff:
		if v != "on" && v != "off" {
			return fmt.Errorf("%q: want on or off", v)
		}
	case kindAny:
		if strings.ContainsAny(v, "(){}+") {
			return fmt.Errorf("%q: a value holds no '(', ')', '{', '}' or '+'", v)
		}
	}
	return nil
}

// Numeric is v as a number for a plot's axis: the number, a duration in
// milliseconds, on 1 and off 0; NaN for anything else.
func Numeric(v string) float64 {
	switch v {
	case "on":
		return 1
	case "off":
		return 0
	}
	x, dur, err := number(v)
	switch {
	case err != nil:
		return math.NaN()
	case dur:
		return x / float64(time.Millisecond)
	}
	return x
}

func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

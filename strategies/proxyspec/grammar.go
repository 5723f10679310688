// Package proxyspec is the grammar of strategy specs and the catalogue of
// the proxy strategies written in it.
//
// The grammar (Split) is that of every strategy spec: built-in strategies
// (package strategies), gRPC policies and proxies alike. A proxy spec
// (Parse) names a real load balancer run as a process between the load
// generator and the backends, its algorithm and its options; this package
// is the one place that says which proxies, algorithms, options and values
// a spec may name. It imports no package of this module, so that package
// strategies, the experiment loader and the proxy runner all read it.
package proxyspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Segment is one "name(params)" of a spec: a strategy or a wrapper of a
// built-in spec, the algorithm or an option of a proxy spec.
//
// The grammar is
//
//	spec    = segment { "+" segment }
//	segment = name [ params ]
//	params  = "(" [ key "=" value { "," key "=" value } ] ")"
//
// with blanks allowed around every token. Names and keys are
// case-sensitive; a value is the trimmed text up to the next "," or ")".
type Segment struct {
	Name   string
	Params map[string]string // nil when none were given
}

// String returns the segment in canonical form: no blanks, parameters
// sorted by key.
func (s Segment) String() string {
	if len(s.Params) == 0 {
		return s.Name
	}
	var b strings.Builder
	b.WriteString(s.Name)
	b.WriteByte('(')
	for i, k := range slices.Sorted(maps.Keys(s.Params)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(s.Params[k])
	}
	b.WriteByte(')')
	return b.String()
}

// CheckKeys rejects a parameter of s that allowed does not list; the error
// names s and the parameter.
func (s Segment) CheckKeys(allowed []string) error {
	for _, k := range slices.Sorted(maps.Keys(s.Params)) {
		if slices.Contains(allowed, k) {
			continue
		}
		if len(allowed) == 0 {
			return fmt.Errorf("%s: unknown parameter %q (%s takes no parameters)", s.Name, k, s.Name)
		}
		return fmt.Errorf("%s: unknown parameter %q (allowed: %s)", s.Name, k, strings.Join(allowed, ", "))
	}
	return nil
}

// Split checks the syntax of spec and splits it into at least one segment.
// Only a duplicate key is reported with its segment's name, every other
// error as a malformed spec.
func Split(spec string) ([]Segment, error) {
	malformed := func(format string, args ...any) error {
		return fmt.Errorf("malformed spec %q: %s", spec, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(spec) == "" {
		return nil, malformed("empty")
	}
	var segs []Segment
	s := spec
	for {
		s = strings.TrimLeft(s, " \t")
		n := strings.IndexFunc(s, func(r rune) bool { return !isNameRune(r) })
		if n < 0 {
			n = len(s)
		}
		name := s[:n]
		s = strings.TrimLeft(s[n:], " \t")
		if name == "" {
			if len(segs) == 0 {
				if s != "" {
					return nil, malformed("want a strategy name, got %q", s[:1])
				}
				return nil, malformed("missing strategy name")
			}
			return nil, malformed("missing wrapper name after \"+\"")
		}
		seg := Segment{Name: name}
		if strings.HasPrefix(s, "(") {
			end := strings.IndexAny(s[1:], "()")
			if end < 0 {
				return nil, malformed("unclosed \"(\" after %q", name)
			}
			end++
			if s[end] == '(' {
				return nil, malformed("nested \"(\" in parameters of %q", name)
			}
			params, err := splitParams(name, s[1:end])
			if err != nil {
				if errors.Is(err, errDuplicate) {
					return nil, err
				}
				return nil, malformed("%v", err)
			}
			seg.Params = params
			s = strings.TrimLeft(s[end+1:], " \t")
		}
		segs = append(segs, seg)
		switch {
		case s == "":
			return segs, nil
		case s[0] == '+':
			s = s[1:]
		default:
			return nil, malformed("unexpected %q after %q", s[:1], name)
		}
	}
}

func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

var errDuplicate = errors.New("duplicate parameter")

// splitParams parses the text between the parentheses of segment name.
func splitParams(name, text string) (map[string]string, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	params := map[string]string{}
	for item := range strings.SplitSeq(text, ",") {
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" || strings.ContainsAny(v, "=") || strings.IndexFunc(k, func(r rune) bool { return !isNameRune(r) }) >= 0 {
			return nil, fmt.Errorf("parameter %q of %q: want key=value", strings.TrimSpace(item), name)
		}
		if _, dup := params[k]; dup {
			return nil, fmt.Errorf("%s: %w %q", name, errDuplicate, k)
		}
		params[k] = v
	}
	return params, nil
}

// IntParam reads the integer parameter key of params, at least least; it
// returns def when key is absent. The error names key and says what was
// wanted.
func IntParam(params map[string]string, key string, def, least int) (int, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		return 0, fmt.Errorf("%s: want an integer >= %d, got %q", key, least, v)
	}
	return n, nil
}

// Int returns the integer parameter key of params, or def when it is
// absent or not an integer; for parameters Parse has validated.
func Int(params map[string]string, key string, def int) int {
	if v, ok := params[key]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

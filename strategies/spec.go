package strategies

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is a parsed strategy spec.
//
// The grammar is
//
//	spec    = base { "+" wrapper }
//	base    = name [ params ]
//	wrapper = name [ params ]
//	params  = "(" [ key "=" value { "," key "=" value } ] ")"
//
// with blanks allowed around every token. Names and keys are case-sensitive;
// a value is the trimmed text up to the next "," or ")". Wrappers apply in
// order: in "p2c+a+b", b wraps a, which wraps p2c.
type Spec struct {
	Base       string
	BaseParams map[string]string // nil when none were given
	Wrappers   []WrapperSpec     // nil when none were given
}

// WrapperSpec is one wrapper of a Spec.
type WrapperSpec struct {
	Name   string
	Params map[string]string // nil when none were given
}

// String returns the spec in canonical form: no blanks, parameters sorted by
// key. Parsing it gives an equal Spec.
func (s Spec) String() string {
	var b strings.Builder
	writeSegment(&b, s.Base, s.BaseParams)
	for _, w := range s.Wrappers {
		b.WriteByte('+')
		writeSegment(&b, w.Name, w.Params)
	}
	return b.String()
}

func writeSegment(b *strings.Builder, name string, params map[string]string) {
	b.WriteString(name)
	if len(params) == 0 {
		return
	}
	b.WriteByte('(')
	for i, k := range slices.Sorted(maps.Keys(params)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(params[k])
	}
	b.WriteByte(')')
}

// A base strategy or wrapper registered by name. configure validates the
// parameters (unknown and duplicate keys are rejected before it runs) and
// returns the builder; the error names the parameter, not the strategy.
type (
	baseEntry struct {
		params    []string
		configure func(params map[string]string) (func(env *buildEnv) Picker, error)
	}
	wrapperEntry struct {
		params    []string
		configure func(params map[string]string) (func(inner Picker, env *buildEnv) Picker, error)
	}
)

var (
	bases    = map[string]baseEntry{}
	wrappers = map[string]wrapperEntry{}
)

// registerBase registers a base strategy; it is called from init.
func registerBase(name string, params []string, configure func(map[string]string) (func(*buildEnv) Picker, error)) {
	if _, dup := bases[name]; dup {
		panic("strategies: base strategy registered twice: " + name)
	}
	bases[name] = baseEntry{params: params, configure: configure}
}

// registerWrapper registers a wrapper; it is called from init.
func registerWrapper(name string, params []string, configure func(map[string]string) (func(Picker, *buildEnv) Picker, error)) {
	if _, dup := wrappers[name]; dup {
		panic("strategies: wrapper registered twice: " + name)
	}
	wrappers[name] = wrapperEntry{params: params, configure: configure}
}

// Names returns the registered base strategies, sorted.
func Names() []string { return slices.Sorted(maps.Keys(bases)) }

// WrapperNames returns the registered wrappers, sorted.
func WrapperNames() []string { return slices.Sorted(maps.Keys(wrappers)) }

// Parse validates spec without building it. The error names the strategy,
// wrapper or parameter at fault and why.
func Parse(spec string) (Spec, error) {
	c, err := compile(spec)
	if err != nil {
		return Spec{}, err
	}
	return c.spec, nil
}

// compiled is a validated spec together with its builders.
type compiled struct {
	spec     Spec
	base     func(*buildEnv) Picker
	wrappers []func(Picker, *buildEnv) Picker
}

func compile(spec string) (compiled, error) {
	segs, err := splitSpec(spec)
	if err != nil {
		return compiled{}, err
	}
	var c compiled

	base := segs[0]
	entry, ok := bases[base.name]
	if !ok {
		msg := fmt.Sprintf("unknown strategy %q (known: %s)", base.name, strings.Join(Names(), ", "))
		if _, isWrapper := wrappers[base.name]; isWrapper {
			msg += fmt.Sprintf("; %q is a wrapper, write it after a strategy as \"+%s\"", base.name, base.name)
		}
		return compiled{}, errors.New(msg)
	}
	if err := checkKeys(base, entry.params); err != nil {
		return compiled{}, err
	}
	if c.base, err = entry.configure(base.params); err != nil {
		return compiled{}, fmt.Errorf("%s: %w", base.name, err)
	}
	c.spec = Spec{Base: base.name, BaseParams: base.params}

	seen := map[string]bool{}
	for _, w := range segs[1:] {
		entry, ok := wrappers[w.name]
		if !ok {
			return compiled{}, fmt.Errorf("unknown wrapper %q (known: %s)", w.name, strings.Join(WrapperNames(), ", "))
		}
		if seen[w.name] {
			return compiled{}, fmt.Errorf("wrapper %q given twice", w.name)
		}
		seen[w.name] = true
		if err := checkKeys(w, entry.params); err != nil {
			return compiled{}, err
		}
		build, err := entry.configure(w.params)
		if err != nil {
			return compiled{}, fmt.Errorf("%s: %w", w.name, err)
		}
		c.wrappers = append(c.wrappers, build)
		c.spec.Wrappers = append(c.spec.Wrappers, WrapperSpec{Name: w.name, Params: w.params})
	}
	return c, nil
}

func checkKeys(seg segment, allowed []string) error {
	for _, k := range slices.Sorted(maps.Keys(seg.params)) {
		if slices.Contains(allowed, k) {
			continue
		}
		if len(allowed) == 0 {
			return fmt.Errorf("%s: unknown parameter %q (%s takes no parameters)", seg.name, k, seg.name)
		}
		return fmt.Errorf("%s: unknown parameter %q (allowed: %s)", seg.name, k, strings.Join(allowed, ", "))
	}
	return nil
}

// segment is one "name(params)" of a spec.
type segment struct {
	name   string
	params map[string]string
}

// splitSpec checks the syntax of spec and splits it into segments; only
// duplicate keys are reported with the segment's name, every other error as
// a malformed spec.
func splitSpec(spec string) ([]segment, error) {
	malformed := func(format string, args ...any) error {
		return fmt.Errorf("malformed spec %q: %s", spec, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(spec) == "" {
		return nil, malformed("empty")
	}
	var segs []segment
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
		seg := segment{name: name}
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
			seg.params = params
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

// Parameter readers for configure functions. Each returns def when key is
// absent; errors name the key and say what was wanted.

func intParam(params map[string]string, key string, def, least int) (int, error) {
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

func durationParam(params map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: want a duration like \"5s\", got %q", key, v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: want a duration > 0, got %q", key, v)
	}
	return d, nil
}

// fractionParam reads a number in (0, 1].
func fractionParam(params map[string]string, key string, def float64) (float64, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("%s: want a number in (0, 1], got %q", key, v)
	}
	return f, nil
}

// noParams is the configure of a base strategy without parameters.
func noParams(build func(*buildEnv) Picker) func(map[string]string) (func(*buildEnv) Picker, error) {
	return func(map[string]string) (func(*buildEnv) Picker, error) { return build, nil }
}

// floatParam reads a finite number in [least, most].
func floatParam(params map[string]string, key string, def, least, most float64) (float64, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < least || f > most {
		return 0, fmt.Errorf("%s: want a number in [%g, %g], got %q", key, least, most, v)
	}
	return f, nil
}

// boolParam reads true/false (also on/off, yes/no, 1/0).
func boolParam(params map[string]string, key string, def bool) (bool, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(v) {
	case "true", "on", "yes", "1":
		return true, nil
	case "false", "off", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("%s: want true or false, got %q", key, v)
}

// enumParam reads one of allowed.
func enumParam(params map[string]string, key, def string, allowed ...string) (string, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	if !slices.Contains(allowed, v) {
		return "", fmt.Errorf("%s: want one of %s, got %q", key, strings.Join(allowed, ", "), v)
	}
	return v, nil
}

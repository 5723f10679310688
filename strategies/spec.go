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

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Spec is a parsed strategy spec. Its grammar, that of proxyspec.Split, is
//
//	spec    = base { "+" wrapper }
//	base    = name [ params ]
//	wrapper = name [ params ]
//	params  = "(" [ key "=" value { "," key "=" value } ] ")"
//
// with blanks allowed around every token. Names and keys are case-sensitive;
// a value is the trimmed text up to the next "," or ")". Wrappers apply in
// order: in "p2c+a+b", b wraps a, which wraps p2c. A zone wrapper reads the
// health of the eject and healthcheck wrappers inside it, written before it
// ("p2c+eject+zone-aware"; see zones.go).
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
	b.WriteString(proxyspec.Segment{Name: s.Base, Params: s.BaseParams}.String())
	for _, w := range s.Wrappers {
		b.WriteByte('+')
		b.WriteString(proxyspec.Segment(w).String())
	}
	return b.String()
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

// Parse is what validates the strategy of an lbchaos:STRATEGY proxy spec.
func init() {
	proxyspec.RegisterBuiltin(func(spec string) (string, error) {
		s, err := Parse(spec)
		return s.String(), err
	})
}

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
	segs, err := proxyspec.Split(spec)
	if err != nil {
		return compiled{}, err
	}
	var c compiled

	base := segs[0]
	entry, ok := bases[base.Name]
	if !ok {
		msg := fmt.Sprintf("unknown strategy %q (known: %s)", base.Name, strings.Join(Names(), ", "))
		if _, isWrapper := wrappers[base.Name]; isWrapper {
			msg += fmt.Sprintf("; %q is a wrapper, write it after a strategy as \"+%s\"", base.Name, base.Name)
		}
		return compiled{}, errors.New(msg)
	}
	if err := base.CheckKeys(entry.params); err != nil {
		return compiled{}, err
	}
	if c.base, err = entry.configure(base.Params); err != nil {
		return compiled{}, fmt.Errorf("%s: %w", base.Name, err)
	}
	c.spec = Spec{Base: base.Name, BaseParams: base.Params}

	seen := map[string]bool{}
	for _, w := range segs[1:] {
		entry, ok := wrappers[w.Name]
		if !ok {
			return compiled{}, fmt.Errorf("unknown wrapper %q (known: %s)", w.Name, strings.Join(WrapperNames(), ", "))
		}
		if seen[w.Name] {
			return compiled{}, fmt.Errorf("wrapper %q given twice", w.Name)
		}
		seen[w.Name] = true
		if err := w.CheckKeys(entry.params); err != nil {
			return compiled{}, err
		}
		build, err := entry.configure(w.Params)
		if err != nil {
			return compiled{}, fmt.Errorf("%s: %w", w.Name, err)
		}
		c.wrappers = append(c.wrappers, build)
		c.spec.Wrappers = append(c.spec.Wrappers, WrapperSpec{Name: w.Name, Params: w.Params})
	}
	return c, nil
}

// Parameter readers for configure functions. Each returns def when key is
// absent; errors name the key and say what was wanted.

// intParam reads an integer >= least; proxy specs read theirs the same way.
func intParam(params map[string]string, key string, def, least int) (int, error) {
	return proxyspec.IntParam(params, key, def, least)
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

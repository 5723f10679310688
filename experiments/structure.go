package experiments

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// problem is one mistake in an experiment file: the line it is on (0 when
// unknown), the field's path as the user wrote it (faults[0].instances[1])
// and why.
type problem struct {
	line int
	path string
	msg  string
}

func (p problem) String() string {
	s := p.msg
	if p.path != "" {
		s = p.path + ": " + s
	}
	if p.line > 0 {
		s = fmt.Sprintf("line %d: %s", p.line, s)
	}
	return s
}

// problemsError is every problem of a file, found in one pass.
type problemsError []problem

func (ps problemsError) Error() string {
	if len(ps) == 1 {
		return ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// requiredKeys are the top-level keys every experiment file gives, with
// what to write. The JSON Schema's "required" must list the same keys
// (TestSchemaAgreesWithLoader).
var requiredKeys = []struct{ key, hint string }{
	{"rate", "requests per second, e.g. rate: 1000"},
	{"instances", "e.g. instances: {count: 10, service: {dist: fixed, value: 10ms}}"},
	{"strategies", "e.g. strategies: [round-robin, least-inflight]"},
}

var (
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// checkStructure checks a decoded document against the file's shape
// before anything is converted, and returns every problem it finds: keys
// that are not fields (with the nearest field), values of the wrong kind
// (a string where a number belongs, a fraction where a whole number
// does, a tab), and missing required keys. yaml.v3 would cut 6.5 to 6 in
// an int field and stop at the first unknown key; this reports them all.
// Nodes decoded by their owners (service, fault, expect) are not
// entered.
func checkStructure(doc *yaml.Node) []problem {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	var ps []problem
	walkShape(root, reflect.TypeFor[file](), "", &ps)
	if root.Kind == yaml.MappingNode {
		for _, r := range requiredKeys {
			if mappingValue(root, r.key) == nil {
				ps = append(ps, problem{path: r.key, msg: "is required: " + r.hint})
			}
		}
		// With rate stages the duration is their total; with one rate
		// the run needs one (the schema's if/then says the same).
		if rate := mappingValue(root, "rate"); rate != nil && rate.Kind == yaml.ScalarNode && (rate.Tag == "!!int" || rate.Tag == "!!float") && mappingValue(root, "duration") == nil {
			ps = append(ps, problem{path: "duration", msg: "is required with a constant rate: the time each strategy runs, e.g. duration: 30s"})
		}
	}
	return ps
}

// mappingValue is the value under key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if i := mappingKey(n, key); i >= 0 {
		return n.Content[i+1]
	}
	return nil
}

// mappingKey is the index of key's node in mapping n's Content, or -1.
func mappingKey(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func walkShape(n *yaml.Node, t reflect.Type, path string, ps *[]problem) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	bad := func(format string, args ...any) {
		*ps = append(*ps, problem{line: n.Line, path: path, msg: fmt.Sprintf(format, args...)})
	}
	if t == nodeType || isNull(n) {
		return
	}
	custom := reflect.PointerTo(t).Implements(unmarshalerType)
	if custom && t != reflect.TypeFor[fileExternal]() {
		// A type that decodes itself (rate) names its own field and line.
		if err := reflect.New(t).Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			p := problem{msg: err.Error()}
			if !strings.Contains(p.msg, "line ") {
				p.line = n.Line
			}
			*ps = append(*ps, p)
		}
		return
	}
	if custom && n.Kind != yaml.MappingNode {
		return // a URL
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping of %s, got %s", fieldList(t), describe(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				*ps = append(*ps, problem{line: k.Line, path: path,
					msg: "unknown field " + strconv.Quote(k.Value) + didYouMean(k.Value, tags(t)) + " (" + fieldList(t) + ")"})
				continue
			}
			walkShape(v, f.Type, join(path, k.Value), ps)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad("want a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			walkShape(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), ps)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping, got %s", describe(n))
			return
		}
		for i := 1; i < len(n.Content); i += 2 {
			walkShape(n.Content[i], t.Elem(), join(path, n.Content[i-1].Value), ps)
		}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		if msg := wholeNumber(n, t.Kind() == reflect.Uint64); msg != "" {
			bad("%s", msg)
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			bad("want a number, got %s", describe(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			bad("want true or false, got %s", describe(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			bad("want a single value, got %s", describe(n))
		}
	}
}

// wholeNumber is why n is not a whole number (non-negative when unsigned),
// or "".
func wholeNumber(n *yaml.Node, unsigned bool) string {
	if n.Kind != yaml.ScalarNode {
		return "want a whole number, got " + describe(n)
	}
	switch n.Tag {
	case "!!int":
		if v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil && unsigned && v < 0 {
			return fmt.Sprintf("want a whole number >= 0, got %s", n.Value)
		}
		return ""
	case "!!float":
		if v, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(v, 0) && v != math.Trunc(v) {
			return fmt.Sprintf("%s is not a whole number; it would be cut to %v", n.Value, math.Trunc(v))
		}
		return fmt.Sprintf("want a whole number, got %s", n.Value)
	}
	return fmt.Sprintf("want a whole number, got %q", n.Value)
}

// fieldByTag is t's field whose yaml tag is key.
func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag == key && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// tags are t's yaml keys in declaration order.
func tags(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// fieldList says which keys a mapping of t takes, for messages.
func fieldList(t reflect.Type) string {
	ks := tags(t)
	if len(ks) > 8 {
		return "see docs/experiments.md for its keys"
	}
	return "keys: " + strings.Join(ks, ", ")
}

// describe names what n holds, for messages: "a mapping", "a sequence",
// or the quoted value.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return "a " + nodeKind(n)
}

// located is err, build's or Validate's, as problems, each with the line
// of the field it names (errors.Join's parts one by one). A message that
// names a line already, or a field the file does not hold (a default),
// keeps none.
func located(err error, doc *yaml.Node) problemsError {
	var errs []error
	var flatten func(error)
	flatten = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				flatten(e)
			}
			return
		}
		errs = append(errs, err)
	}
	flatten(err)
	var ps problemsError
	for _, e := range errs {
		msg := e.Error()
		path, rest, ok := strings.Cut(msg, ": ")
		if line := lineOf(doc, path); ok && line > 0 && !strings.HasPrefix(rest, "line ") {
			ps = append(ps, problem{line: line, path: path, msg: rest})
			continue
		}
		ps = append(ps, problem{msg: msg})
	}
	return ps
}

// lineOf is the line of the value at path (keys joined by ".", list
// items as [i]) in doc, or 0 when doc does not hold it.
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := 0
	for seg := range strings.SplitSeq(path, ".") {
		key, idx, _ := strings.Cut(seg, "[")
		if key != "" {
			if n.Kind != yaml.MappingNode {
				return 0
			}
			i := mappingKey(n, key)
			if i < 0 {
				return 0
			}
			line, n = n.Content[i].Line, n.Content[i+1]
		}
		for idx != "" {
			num, more, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(num)
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return 0
			}
			n, line = n.Content[i], n.Content[i].Line
			idx = strings.TrimPrefix(more, "[")
		}
	}
	return line
}

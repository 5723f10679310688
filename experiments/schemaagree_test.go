package experiments

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// TestSchemaAgreesWithLoader checks schemas/experiment.schema.json against
// the loader over every field, both ways: the same keys at every level
// (the file type's yaml tags), the same kind of value, the same required
// keys, and for every field a value of the wrong kind (a fraction where a
// whole number belongs, text where a number does, a mapping where text
// does) that both refuse at that field. Fields decoded by their owners
// (service, fault, expect) are checked by their own tests.
func TestSchemaAgreesWithLoader(t *testing.T) {
	raw, err := os.ReadFile(experimentSchema)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(experimentSchema)
	if err != nil {
		t.Fatal(err)
	}
	defs, _ := schema["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			d, _ := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
			return d
		}
		return s
	}

	var required []string
	for _, r := range schema["required"].([]any) {
		required = append(required, r.(string))
	}
	var loaderRequired []string
	for _, r := range requiredKeys {
		loaderRequired = append(loaderRequired, r.key)
	}
	slices.Sort(required)
	slices.Sort(loaderRequired)
	if !slices.Equal(required, loaderRequired) {
		t.Errorf("required keys: schema %v, loader %v", required, loaderRequired)
	}

	// Whole files where the required keys depend on each other.
	for _, tc := range []struct {
		src string
		ok  bool
	}{
		{"rate: 100\nduration: 5s\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n", true},
		{"rate: 100\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n", false},
		{"rate: {stages: [{duration: 5s, target: 100}]}\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n", true},
		{"duration: 5s\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n", false},
	} {
		var doc any
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatal(err)
		}
		schemaErr := sch.Validate(doc)
		_, loaderErr := Parse("t.yaml", []byte(tc.src))
		if (schemaErr == nil) != tc.ok || (loaderErr == nil) != tc.ok {
			t.Errorf("%q: schema %v, loader %v; want both ok=%v", tc.src, schemaErr, loaderErr, tc.ok)
		}
	}

	type probe struct {
		path  []string // keys; "0" is a list's first item
		value any
		why   string
	}
	var probes []probe
	var walk, walkStruct func(s map[string]any, typ reflect.Type, path []string)
	walkStruct = func(s map[string]any, typ reflect.Type, path []string) {
		where := strings.Join(path, ".")
		props, _ := s["properties"].(map[string]any)
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		goKeys := slices.Sorted(slices.Values(tags(typ)))
		if !slices.Equal(keys, goKeys) {
			t.Errorf("%s: keys: schema %v, loader %v", or(where, "top level"), keys, goKeys)
		}
		for _, k := range keys {
			if f, ok := fieldByTag(typ, k); ok {
				walk(props[k].(map[string]any), f.Type, append(slices.Clone(path), k))
			}
		}
	}
	walk = func(s map[string]any, typ reflect.Type, path []string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		s = resolve(s)
		where := strings.Join(path, ".")
		if typ == nodeType || s == nil {
			return
		}
		if reflect.PointerTo(typ).Implements(unmarshalerType) {
			// A scalar or a mapping (rate, an external instance): the
			// mapping form's keys are compared where the schema gives one.
			if typ == reflect.TypeFor[fileRate]() {
				return // checks its own keys: TestRate
			}
			for _, key := range []string{"oneOf", "anyOf"} {
				alts, _ := s[key].([]any)
				for _, a := range alts {
					if m := resolve(a.(map[string]any)); m["type"] == "object" {
						walkStruct(m, typ, path)
					}
				}
			}
			if s["type"] == "object" {
				walkStruct(s, typ, path)
			}
			return
		}
		want := map[reflect.Kind]string{reflect.Int: "integer", reflect.Uint64: "integer", reflect.Float64: "number",
			reflect.Bool: "boolean", reflect.String: "string", reflect.Slice: "array", reflect.Struct: "object", reflect.Map: "object"}[typ.Kind()]
		got, _ := s["type"].(string)
		if _, enum := s["enum"]; enum && got == "" {
			got = "string"
		}
		if got != want {
			t.Errorf("%s: schema type %q, loader %s (%s)", where, got, want, typ)
			return
		}
		switch typ.Kind() {
		case reflect.Struct:
			walkStruct(s, typ, path)
		case reflect.Slice:
			if items, ok := s["items"].(map[string]any); ok {
				walk(items, typ.Elem(), append(slices.Clone(path), "0"))
			}
			probes = append(probes, probe{path, "x", "text for a list"})
		case reflect.Int, reflect.Uint64:
			probes = append(probes, probe{path, 2.5, "a fraction"}, probe{path, "two", "text"})
		case reflect.Float64:
			probes = append(probes, probe{path, "fast", "text"})
		case reflect.Bool:
			probes = append(probes, probe{path, "yes please", "text"})
		case reflect.String:
			probes = append(probes, probe{path, map[string]any{"a": 1}, "a mapping"})
		}
	}
	walk(schema, reflect.TypeFor[file](), nil)
	if len(probes) < 40 {
		t.Fatalf("only %d probes: the walk missed fields", len(probes))
	}

	for _, p := range probes {
		where := strings.Join(p.path, ".")
		t.Run(where+"/"+strings.ReplaceAll(p.why, " ", "-"), func(t *testing.T) {
			doc := nest(p.path, p.value)
			if err := sch.Validate(doc); err == nil || !errorAt(err, p.path) {
				t.Errorf("the schema does not refuse %s at %s: %v", p.why, where, err)
			}
			src, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var n yaml.Node
			if err := yaml.Unmarshal(src, &n); err != nil {
				t.Fatal(err)
			}
			loaderPath := yamlPath(p.path)
			ps := checkStructure(&n)
			if !slices.ContainsFunc(ps, func(q problem) bool { return q.path == loaderPath || strings.HasPrefix(q.msg, loaderPath+":") }) {
				t.Errorf("the loader does not refuse %s at %s; problems: %v", p.why, loaderPath, ps)
			}
		})
	}
}

// nest is a document holding v at path; "0" makes a one-item list.
func nest(path []string, v any) any {
	if len(path) == 0 {
		return v
	}
	inner := nest(path[1:], v)
	if path[0] == "0" {
		return []any{inner}
	}
	return map[string]any{path[0]: inner}
}

// yamlPath writes path as the loader's messages do: a.b[0].c.
func yamlPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// errorAt reports whether err, a schema validation error, has a cause at
// exactly path.
func errorAt(err error, path []string) bool {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return false
	}
	var found bool
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if slices.Equal(e.InstanceLocation, path) && len(e.Causes) == 0 {
			found = true
		}
		for _, c := range e.Causes {
			visit(c)
		}
	}
	visit(ve)
	return found
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

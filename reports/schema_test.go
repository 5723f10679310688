package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The JSON Schema of summary.json (schemas/summary.schema.json) and its
// field-by-field document (docs/summary.md) are generated from the Summary
// type and its fields' comments, so that neither can drift from the model:
// TestSummarySchemaFiles fails when either differs from what the model
// gives; go test ./reports -run TestSummarySchemaFiles -update rewrites them.

const (
	summarySchemaPath = "../schemas/summary.schema.json"
	summaryDocPath    = "../docs/summary.md"
	summarySchemaID   = "https://github.com/lbchaos/lbchaos/schemas/summary.schema.json"
)

// fieldDocs returns the comment of every struct field declared in this
// package's non-test files, by "Type.Field".
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			var texts []string
			for _, fld := range st.Fields.List {
				text := strings.TrimSpace(strings.Join(strings.Fields(fld.Doc.Text()+" "+fld.Comment.Text()), " "))
				texts = append(texts, text)
				for _, id := range fld.Names {
					docs[ts.Name.Name+"."+id.Name] = text
				}
			}
			// A comment that opens with several fields' names ("CPUCoresP50
			// and CPUCoresMax are ...") documents each of them.
			for _, text := range texts {
				for _, name := range leadNames(text) {
					if k := ts.Name.Name + "." + name; docs[k] == "" {
						if _, ok := docs[k]; ok {
							docs[k] = text
						}
					}
				}
			}
			return false
		})
	}
	return docs
}

// leadNames returns the names a field comment's clauses open with:
// "A and B are ..." gives A and B, and "X counts ...; Y and Z are ..."
// gives X, Y and Z.
func leadNames(doc string) []string {
	var names []string
	for _, clause := range strings.FieldsFunc(doc, func(r rune) bool { return r == ';' || r == '.' }) {
		for _, w := range strings.Fields(clause) {
			w = strings.TrimSuffix(w, ",")
			if w == "and" {
				continue
			}
			if !token.IsExported(w) || !token.IsIdentifier(w) {
				break
			}
			names = append(names, w)
		}
	}
	return names
}

// schemaGen builds a JSON Schema (draft 2020-12) from Go types as
// encoding/json encodes them.
type schemaGen struct {
	docs map[string]string
	defs map[string]map[string]any
	// rows are the document's table rows, per type, in field order.
	rows  map[string][]string
	order []string // type names in the order met
}

var timeType = reflect.TypeFor[time.Time]()

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Pointer:
		s := g.schema(t.Elem())
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		// A nil slice without omitempty encodes as null.
		return map[string]any{"type": []any{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		g.define(t)
		return map[string]any{"$ref": "#/$defs/" + t.Name()}
	}
	panic(fmt.Sprintf("schema: unsupported type %v", t))
}

// jsonField returns a struct field's JSON name and omitempty, or "" when
// encoding/json leaves it out.
func jsonField(f reflect.StructField) (name string, omit bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, slices.Contains(strings.Split(opts, ","), "omitempty")
}

func (g *schemaGen) define(t reflect.Type) {
	if _, ok := g.defs[t.Name()]; ok {
		return
	}
	def := map[string]any{"type": "object"}
	g.defs[t.Name()] = def // before the fields: types may recur
	g.order = append(g.order, t.Name())
	props := map[string]any{}
	var required []any
	for f := range t.Fields() {
		name, omit := jsonField(f)
		if name == "" {
			continue
		}
		s := g.schema(f.Type)
		doc := g.docs[t.Name()+"."+f.Name]
		if doc != "" {
			s["description"] = doc
		}
		props[name] = s
		if !omit {
			required = append(required, name)
		}
		presence := "always"
		if omit {
			presence = "when set"
		}
		g.rows[t.Name()] = append(g.rows[t.Name()], fmt.Sprintf("| `%s` | %s | %s | %s |", name, typeName(f.Type), presence, strings.ReplaceAll(doc, "|", `\|`)))
	}
	def["properties"] = props
	if len(required) > 0 {
		def["required"] = required
	}
}

// typeName is a field's type as the document names it.
func typeName(t reflect.Type) string {
	switch {
	case t == timeType:
		return "string (RFC 3339 time)"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem()) + " or null"
	case t.Kind() == reflect.Slice:
		return "array of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "object of " + typeName(t.Elem())
	case t.Kind() == reflect.Struct:
		return "[" + t.Name() + "](#" + strings.ToLower(t.Name()) + ")"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	}
	return "integer"
}

// summarySchema returns the schema document and the field-by-field
// Markdown document of summary.json.
func summarySchema(t *testing.T) (schema, doc []byte) {
	t.Helper()
	g := &schemaGen{docs: fieldDocs(t), defs: map[string]map[string]any{}, rows: map[string][]string{}}
	g.define(reflect.TypeFor[Summary]())
	root := g.defs["Summary"]
	delete(g.defs, "Summary")
	out := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         summarySchemaID,
		"title":       "lbchaos summary.json (" + Schema + ")",
		"description": "The numbers of one lbchaos run. Fields are only ever added: a reader must accept properties it does not know. Generated from reports.Summary; see docs/summary.md.",
		"type":        "object",
		"properties":  root["properties"],
		"required":    root["required"],
		"$defs":       g.defs,
	}
	props := out["properties"].(map[string]any)
	props["schema"].(map[string]any)["const"] = Schema
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}

	var md strings.Builder
	md.WriteString(`# summary.json

Every run writes ` + "`summary.json`" + ` at the top of its output directory: the
numbers of the run, which other tools read. Its ` + "`schema`" + ` field is
` + "`" + Schema + "`" + `. This is a contract: fields may be added, but no field is
ever renamed or changes its meaning; a reader must accept fields it does not
know. The JSON Schema is [schemas/summary.schema.json](../schemas/summary.schema.json).

This document and the schema are generated from the ` + "`reports.Summary`" + ` type
(reports/summary.go and the files beside it) and its field comments:
` + "`go test ./reports -run TestSummarySchemaFiles -update`" + `.

Units are in the names: ` + "`_ms`" + ` milliseconds, ` + "`_s`" + ` seconds; a ratio is
between 0 and 1. Latency covers every request, failed ones included (a
timeout counts as its timeout). "always" fields are present even when zero;
"when set" fields are absent when zero or empty.
`)
	for _, name := range g.order {
		fmt.Fprintf(&md, "\n## %s\n\n| field | type | present | meaning |\n| --- | --- | --- | --- |\n", name)
		for _, r := range g.rows[name] {
			md.WriteString(r + "\n")
		}
	}
	return sb.Bytes(), []byte(md.String())
}

func TestSummarySchemaFiles(t *testing.T) {
	schema, doc := summarySchema(t)
	for _, f := range []struct {
		path string
		got  []byte
	}{{summarySchemaPath, schema}, {summaryDocPath, doc}} {
		if *update {
			if err := os.WriteFile(f.path, f.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(want), string(f.got)); d != "" {
			t.Errorf("%s differs from the Summary model (-file +model); run go test ./reports -run TestSummarySchemaFiles -update:\n%s", f.path, d)
		}
	}
}

// TestSummaryFieldsDocumented fails for a field of summary.json whose
// meaning docs/summary.md would leave blank: other tools read the file, so
// every field says what it holds.
func TestSummaryFieldsDocumented(t *testing.T) {
	_, doc := summarySchema(t)
	section := ""
	for line := range strings.SplitSeq(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			section = name
			continue
		}
		if cells := strings.Split(line, " | "); len(cells) == 4 && strings.HasPrefix(line, "| `") && strings.TrimSpace(strings.TrimSuffix(cells[3], "|")) == "" {
			t.Errorf("%s.%s has no comment: document the Go field (go test ./reports -run TestSummarySchemaFiles -update then writes it out)", section, strings.Trim(cells[0], "| `"))
		}
	}
}

// TestSummarySchemaCoversModel walks every JSON field of Summary, by
// reflection, and finds it in the shipped schema file.
func TestSummarySchemaCoversModel(t *testing.T) {
	b, err := os.ReadFile(summarySchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	defs, _ := doc["$defs"].(map[string]any)
	var walk func(path string, typ reflect.Type, props map[string]any)
	seen := map[reflect.Type]bool{}
	walk = func(path string, typ reflect.Type, props map[string]any) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			name, _ := jsonField(f)
			if name == "" {
				continue
			}
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s (field %s.%s) is not in %s", path, name, typ.Name(), f.Name, summarySchemaPath)
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct || ft == timeType {
				continue
			}
			def, ok := defs[ft.Name()].(map[string]any)
			if !ok {
				t.Errorf("%s.%s: type %s has no definition in the schema", path, name, ft.Name())
				continue
			}
			_ = p
			sub, _ := def["properties"].(map[string]any)
			walk(path+"."+name, ft, sub)
		}
	}
	props, _ := doc["properties"].(map[string]any)
	walk("summary", reflect.TypeFor[Summary](), props)
}

// compileSchema compiles a shipped schema file.
func compileSchema(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sch
}

// TestSummaryValidates: the sample summary, written as summary.json,
// validates against the shipped schema; a summary with a core field of
// the wrong type does not.
func TestSummaryValidates(t *testing.T) {
	sch := compileSchema(t, summarySchemaPath)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleSummary()); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("sample summary.json: %v", err)
	}
	bad := strings.Replace(buf.String(), `"requests": `, `"requests": "many", "x": `, 1)
	inst, err = jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err == nil {
		t.Error("a string for requests validated")
	}
}

package experiments

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

const experimentSchema = "../schemas/experiment.schema.json"

// TestShippedExperimentsMatchSchema: every shipped experiment file
// validates against schemas/experiment.schema.json, the schema editors
// use for completion; and the schema rejects what the loader rejects in
// the simplest cases (an unknown key, a mistyped fault mode).
func TestShippedExperimentsMatchSchema(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile(experimentSchema)
	if err != nil {
		t.Fatalf("%s: %v", experimentSchema, err)
	}
	validate := func(name string, src []byte) error {
		var doc any
		if err := yaml.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return sch.Validate(doc)
	}
	files, err := fs.Glob(shipped, "*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped experiments: %v, %d files", err, len(files))
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			src, err := fs.ReadFile(shipped, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := validate(name, src); err != nil {
				t.Errorf("%s does not validate against %s: %v", name, experimentSchema, err)
			}
		})
	}
	for _, tc := range []struct{ name, src string }{
		{"unknown key", "name: x\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\nrte: 100\n"},
		{"unknown fault mode", "name: x\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\nfaults: [{instance: 0, fault: {mode: explode}}]\n"},
		{"duration without unit", "name: x\nduration: 30\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: [p2c]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := validate(tc.name, []byte(tc.src)); err == nil {
				t.Errorf("the schema accepts %q", strings.TrimSpace(tc.src))
			}
			if _, err := Parse("test.yaml", []byte(tc.src)); err == nil {
				t.Errorf("the loader accepts %q", strings.TrimSpace(tc.src))
			}
		})
	}
}

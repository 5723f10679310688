package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaPath = "../../schemas/sweep.schema.json"

// TestSweepJSONValidates: a sweep's sweep.json validates against the
// shipped schema, one with a field of the wrong type does not, and every
// field of Result is in the schema.
func TestSweepJSONValidates(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	c := simConfig(t, "rate=50,250", "faults=on,off")
	if c.Bound, err = ParseBound("p99_ms < 200"); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	res.Points[0].Strategies[0].Real = map[string]float64{"p99_ms": 3}
	res.Points[0].Aborted = "p99_ms 900 > 500 over 2s in round-robin at 3.0s"
	res.Points[0].Strategies[0].Aborted = true
	res.Knees[0].Partial = true
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("sweep.json: %v", err)
	}
	bad := strings.Replace(string(js), `"repeat":1`, `"repeat":"once"`, 1)
	if inst, err = jsonschema.UnmarshalJSON(strings.NewReader(bad)); err != nil {
		t.Fatal(err)
	}
	if sch.Validate(inst) == nil {
		t.Error("a sweep.json with repeat \"once\" validates")
	}
	// Every JSON field of the model is in the schema.
	var doc map[string]any
	text, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Result](), reflect.TypeFor[DimOut](), reflect.TypeFor[PointResult](), reflect.TypeFor[Figures](), reflect.TypeFor[Knee]()} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !bytes.Contains(text, []byte(`"`+name+`":`)) {
				t.Errorf("%s.%s (%s) is not in %s", typ.Name(), typ.Field(i).Name, name, schemaPath)
			}
		}
	}
}

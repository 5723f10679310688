package reports

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJSONRoundTrip(t *testing.T) {
	want := sampleSummary()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip changed the summary (-want +got):\n%s", d)
	}
}

func TestWriteJSONSetsSchemaAndDoesNotModify(t *testing.T) {
	s := &Summary{Experiment: "x"}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != "" || s.FaultyInstances != nil || s.Strategies != nil {
		t.Errorf("WriteJSON modified its argument: %+v", s)
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != Schema {
		t.Errorf("schema = %q, want %q", got.Schema, Schema)
	}
}

func TestWriteJSONEmptyArrays(t *testing.T) {
	s := &Summary{Strategies: []Strategy{{Name: "p2c"}}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc["faulty_instances"].([]any); !ok || len(v) != 0 {
		t.Errorf("faulty_instances = %#v, want []", doc["faulty_instances"])
	}
	st := doc["strategies"].([]any)[0].(map[string]any)
	if v, ok := st["instances"].([]any); !ok || len(v) != 0 {
		t.Errorf("instances = %#v, want []", st["instances"])
	}

	buf.Reset()
	if err := WriteJSON(&buf, &Summary{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"strategies": []`) {
		t.Errorf("nil strategies not written as []:\n%s", buf.String())
	}
}

func TestReadJSONRejectsOtherSchema(t *testing.T) {
	for _, tc := range []struct {
		name, doc, wantErr string
	}{
		{"other version", `{"schema": "lbchaos/summary/v2"}`, `"lbchaos/summary/v2"`},
		{"missing", `{"experiment": "x"}`, "no schema"},
		{"not json", `schema`, "decoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ReadJSON error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadJSONIgnoresUnknownFields(t *testing.T) {
	s, err := ReadJSON(strings.NewReader(`{"schema": "` + Schema + `", "experiment": "x", "added_later": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Experiment != "x" {
		t.Errorf("experiment = %q", s.Experiment)
	}
}

// TestJSONContractKeys checks the v1 core field names of docs/summary.md.
// Keys beyond the core are allowed; a missing or renamed core key is not.
func TestJSONContractKeys(t *testing.T) {
	latency := []string{"mean", "p50", "p90", "p99", "p999", "max"}
	core := map[string][]string{
		"": {"schema", "experiment", "engine", "backends", "seed", "started", "duration_s",
			"target_rate", "slow_threshold_ms", "faulty_instances", "strategies"},
		"strategies[]": {"name", "requests", "achieved_rate", "generator_behind", "success_ratio",
			"error_ratio", "timeout_ratio", "slow_ratio", "faulty_share", "ejections", "latency_ms", "instances"},
		"strategies[].latency_ms":             latency,
		"strategies[].instances[]":            {"id", "faulty", "requests", "share", "errors", "error_ratio", "latency_ms"},
		"strategies[].instances[].latency_ms": latency,
	}

	// A zero-valued summary with one strategy and one instance: core keys
	// must be present even when their values are zero.
	var buf bytes.Buffer
	s := &Summary{Strategies: []Strategy{{Instances: []Instance{{}}}}}
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]any{"": doc}
	st := doc["strategies"].([]any)[0].(map[string]any)
	objects["strategies[]"] = st
	objects["strategies[].latency_ms"] = st["latency_ms"].(map[string]any)
	in := st["instances"].([]any)[0].(map[string]any)
	objects["strategies[].instances[]"] = in
	objects["strategies[].instances[].latency_ms"] = in["latency_ms"].(map[string]any)

	for path, want := range core {
		obj := objects[path]
		for _, k := range want {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s: core key %q missing", path, k)
			}
		}
		if path == "strategies[].latency_ms" || path == "strategies[].instances[].latency_ms" {
			var keys []string
			for k := range obj {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			sorted := slices.Sorted(slices.Values(want))
			if d := cmp.Diff(sorted, keys); d != "" {
				t.Errorf("%s keys (-want +got):\n%s", path, d)
			}
		}
	}
	if v, ok := doc["faulty_instances"].([]any); !ok || len(v) != 0 {
		t.Errorf("faulty_instances = %#v, want []", doc["faulty_instances"])
	}
}

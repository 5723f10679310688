package experiments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Decoding helpers of the loader: a duration field, and a YAML mapping
// decoded by its owner's JSON rules.

// duration parses the value s of field. An empty s gives def, except that
// the run's own duration has no default and is required.
func duration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		if def == 0 && field == "duration" {
			return 0, fieldErr(field, "is required, e.g. 30s")
		}
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fieldErr(field, "want a duration like \"30s\" or \"10ms\", got %q", s)
	}
	return d, nil
}

// nodeJSON converts a YAML mapping to JSON so that its owner (the fault
// model, the service distribution) decodes it strictly with its own rules.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping like {key: value}", n.Line)
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// decodeJSONNode decodes the mapping n into v by v's JSON rules, rejecting
// unknown fields.
func decodeJSONNode(n *yaml.Node, v any) error {
	raw, err := nodeJSON(n)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

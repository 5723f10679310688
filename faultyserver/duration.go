package faultyserver

import (
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written in JSON and YAML as a Go duration
// string such as "10ms" or "1.5s". Numbers are rejected, so a unit is never
// guessed.
type Duration time.Duration

var (
	_ json.Marshaler   = Duration(0)
	_ json.Unmarshaler = (*Duration)(nil)
	_ yaml.Marshaler   = Duration(0)
	_ yaml.Unmarshaler = (*Duration)(nil)
)

// String formats d like time.Duration.String.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON accepts a JSON string holding a Go duration.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return durationError(string(b))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return durationError(string(b))
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML accepts a YAML string scalar holding a Go duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return durationError("a YAML collection")
	}
	if n.ShortTag() != "!!str" {
		return durationError(n.Value)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return durationError(fmt.Sprintf("%q", n.Value))
	}
	*d = Duration(v)
	return nil
}

func durationError(got string) error {
	return fmt.Errorf(`want a duration like "10ms", got %s`, got)
}

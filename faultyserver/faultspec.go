package faultyserver

import (
	"bytes"
	"encoding/json"

	"gopkg.in/yaml.v3"
)

// FaultSpec carries a Fault through JSON and YAML documents, such as
// experiment files, in the form ParseFault reads. A nil Fault is null.
type FaultSpec struct {
	Fault Fault
}

// MarshalJSON encodes s.Fault with MarshalFault, or null.
func (s FaultSpec) MarshalJSON() ([]byte, error) {
	if s.Fault == nil {
		return []byte("null"), nil
	}
	return MarshalFault(s.Fault)
}

// UnmarshalJSON decodes with ParseFault; null leaves a nil Fault.
func (s *FaultSpec) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		s.Fault = nil
		return nil
	}
	f, err := ParseFault(b)
	if err != nil {
		return err
	}
	s.Fault = f
	return nil
}

// MarshalYAML encodes s.Fault as a block mapping with "mode" first, or null.
func (s FaultSpec) MarshalYAML() (any, error) {
	if s.Fault == nil {
		return nil, nil
	}
	b, err := MarshalFault(s.Fault)
	if err != nil {
		return nil, err
	}
	// JSON is YAML: decoding it into a Node keeps the key order.
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	n := doc.Content[0]
	plainStyle(n)
	return n, nil
}

func plainStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
}

// UnmarshalYAML decodes a mapping such as
//
//	mode: fail
//	status: 500
//	delay: 10ms
//
// with the same rules as ParseFault; null leaves a nil Fault.
func (s *FaultSpec) UnmarshalYAML(n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	if v == nil {
		s.Fault = nil
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := ParseFault(b)
	if err != nil {
		return err
	}
	s.Fault = f
	return nil
}

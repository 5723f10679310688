package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// WriteJSON writes s to w as indented summary.json. The written document
// carries Schema when s.Schema is empty, and faulty_instances, strategies and
// instances are written as [] rather than null when nil. s is not modified.
// Non-finite numbers cannot be represented in JSON and make WriteJSON fail.
func WriteJSON(w io.Writer, s *Summary) error {
	if s == nil {
		return fmt.Errorf("reports: nil summary")
	}
	out := normalized(s)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("reports: encoding summary: %w", err)
	}
	return nil
}

// normalized returns a shallow copy of s with the schema set and the
// contract's array fields non-nil.
func normalized(s *Summary) *Summary {
	out := *s
	if out.Schema == "" {
		out.Schema = Schema
	}
	if out.FaultyInstances == nil {
		out.FaultyInstances = []int{}
	}
	out.Strategies = make([]Strategy, len(s.Strategies))
	copy(out.Strategies, s.Strategies)
	for i := range out.Strategies {
		if out.Strategies[i].Instances == nil {
			out.Strategies[i].Instances = []Instance{}
		}
	}
	return &out
}

// ReadJSON decodes a summary.json document. It rejects documents whose schema
// is not Schema, and anything but white space after the document; fields it
// does not know are ignored, since later versions of the same schema may add
// fields.
func ReadJSON(r io.Reader) (*Summary, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reports: reading summary: %w", err)
	}
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("reports: decoding summary: %w", withField(data, err))
	}
	// A second document after the first is a damaged file, not a summary.
	end := dec.InputOffset()
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reports: decoding summary: text after the document's end at byte %d", end)
	}
	switch s.Schema {
	case Schema:
	case "":
		return nil, fmt.Errorf("reports: summary has no schema field, want %q", Schema)
	default:
		return nil, fmt.Errorf("reports: summary schema is %q, this version reads only %q", s.Schema, Schema)
	}
	return &s, nil
}

// withField names the top-level field of data whose value err is about
// when err does not say: an error of a field's own decoder (time.Time's,
// for started) carries no field path.
func withField(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return err
	}
	// Only the first document counts: text after it is reported apart.
	var fields map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(data)).Decode(&fields) != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		one, merr := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		if merr != nil {
			continue
		}
		if ferr := json.Unmarshal(one, new(Summary)); ferr != nil {
			return fmt.Errorf("%s: %w", k, ferr)
		}
	}
	return err
}

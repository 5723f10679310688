package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReadJSON reads summary.json documents as report and compare do. An
// accepted document must be one JSON value, write back without error, and
// read back to a summary that writes the same bytes; compared with itself
// it has no regressions. A rejected one's error must say whether the schema,
// a field (by its path) or the JSON syntax is at fault.
func FuzzReadJSON(f *testing.F) {
	var sample bytes.Buffer
	if err := WriteJSON(&sample, sampleSummary()); err != nil {
		f.Fatal(err)
	}
	f.Add(sample.Bytes())
	for _, s := range []string{
		`{"schema":"lbchaos/summary/v1"}`,
		`{"schema":"lbchaos/summary/v1","strategies":[{"name":"p2c","requests":10,"latency_ms":{"p99":1},"instances":[{"id":0}]}]}`,
		`{"schema":"lbchaos/summary/v1","strategies":[{"name":"p2c"},{"name":"p2c"}]}`,
		`{"schema":"lbchaos/summary/v1","started":"2026-11-29T15:00:00+01:00","faulty_instances":[0,2]}`,
		`{"schema":"lbchaos/summary/v2"}`, `{}`, `null`, `[]`, `{"schema":"lbchaos/summary/v1","seed":-1}`,
		`{"schema":"lbchaos/summary/v1","strategies":[{"requests":"x"}]}`, `{"schema":`,
		`{"schema":"lbchaos/summary/v1"} {"schema":"lbchaos/summary/v1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			checkReadError(t, data, err)
			return
		}
		if !json.Valid(data) {
			t.Fatalf("ReadJSON(%q) accepted a document that is not one JSON value", data)
		}
		var first bytes.Buffer
		if err := WriteJSON(&first, s); err != nil {
			t.Fatalf("ReadJSON(%q) accepted a summary WriteJSON cannot write: %v", data, err)
		}
		back, err := ReadJSON(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("summary written as %s does not read back: %v", first.Bytes(), err)
		}
		var second bytes.Buffer
		if err := WriteJSON(&second, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("summary of %q written, read and written again differs:\n%s\n%s", data, first.Bytes(), second.Bytes())
		}
		if err := WriteComparison(io.Discard, s, back); err != nil {
			t.Fatalf("WriteComparison of %q with itself: %v", data, err)
		}
		var out strings.Builder
		n, err := WriteRegressions(&out, s, back, DefaultTolerance)
		if err != nil || n != 0 {
			t.Fatalf("WriteRegressions of %q against itself: %d regressions, %v:\n%s", data, n, err, out.String())
		}
	})
}

func checkReadError(t *testing.T, data []byte, err error) {
	t.Helper()
	msg := err.Error()
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case !strings.HasPrefix(msg, "reports: "):
		t.Fatalf("ReadJSON(%q): error %q does not say what was read", data, msg)
	case strings.Contains(msg, "schema"), strings.Contains(msg, "text after the document's end at byte "):
	case errors.As(err, &typ):
		if typ.Field == "" && !strings.Contains(msg, "Go value of type reports.Summary") {
			t.Fatalf("ReadJSON(%q): type error %q names no field", data, msg)
		}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
	case namesTopField(msg, data):
	default:
		t.Fatalf("ReadJSON(%q): error %q names neither the schema, a field nor the syntax", data, msg)
	}
}

// TestReadJSONRejectsTextAfterDocument pins what fuzzing found: ReadJSON
// read the first of two concatenated documents and ignored the rest.
func TestReadJSONRejectsTextAfterDocument(t *testing.T) {
	for _, tc := range []struct{ name, doc, err string }{
		{"second document", `{"schema":"lbchaos/summary/v1"} {"schema":"lbchaos/summary/v1"}`, "text after the document's end at byte 31"},
		{"garbage", "{\"schema\":\"lbchaos/summary/v1\"}\n}", "text after the document's end at byte 31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ReadJSON(%q): err = %v, want one containing %q", tc.doc, err, tc.err)
			}
		})
	}
	if _, err := ReadJSON(strings.NewReader("{\"schema\":\"lbchaos/summary/v1\"}\n\t \n")); err != nil {
		t.Fatalf("white space after the document: %v", err)
	}
}

// namesTopField reports whether msg names, after ReadJSON's prefix, a
// top-level key of data.
func namesTopField(msg string, data []byte) bool {
	var fields map[string]json.RawMessage
	_ = json.NewDecoder(bytes.NewReader(data)).Decode(&fields)
	for k := range fields {
		if strings.HasPrefix(msg, "reports: decoding summary: "+k+": ") {
			return true
		}
	}
	return false
}

// TestReadJSONNamesFieldOfOwnDecoder pins what fuzzing found: a started
// that is not a time string gave "Time.UnmarshalJSON: input is not a JSON
// string", naming no field.
func TestReadJSONNamesFieldOfOwnDecoder(t *testing.T) {
	for doc, want := range map[string]string{
		`{"schema":"lbchaos/summary/v1","started":[]}`:          "reports: decoding summary: started: Time.UnmarshalJSON: input is not a JSON string",
		`{"schema":"lbchaos/summary/v1","stArted":"yesterday"}`: `reports: decoding summary: stArted: parsing time`,
		// Found by fuzzing: text after the document hid the field's name.
		`{"stArted":[]}0`: "reports: decoding summary: stArted: Time.UnmarshalJSON",
	} {
		_, err := ReadJSON(strings.NewReader(doc))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ReadJSON(%s): err = %v, want one starting %q", doc, err, want)
		}
	}
}

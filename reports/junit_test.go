package reports

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJUnit(t *testing.T) {
	results := []ExpectationResult{
		{Strategy: "round-robin", Metric: "error_ratio", Op: ">", Want: 0.07, Got: 0.1, Passed: true},
		{Strategy: "least-inflight", Metric: "error_ratio", Op: "<", Want: 0.15, Got: 0.4271},
		{Strategy: "p2c", Metric: "p99_ms", Op: "<", Want: 20, Missing: true},
	}
	doc := NewJUnit("lbchaos expectations", []JUnitRun{
		{Suite: "fast-fail (sim engine, sim backends)", Experiment: "fast-fail", Results: results},
		{Suite: "fast-fail (real engine, process backends)", Experiment: "fast-fail", Results: results, Advisory: true},
		{Suite: "fast-fail (3 repetitions)", Experiment: "fast-fail", Results: results[1:2], Over: "the median of 3 repetitions"},
	})
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, doc); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	if !bytes.HasPrefix(raw, []byte(xml.Header)) {
		t.Errorf("no XML declaration:\n%s", raw)
	}

	// Only the elements of the common JUnit schema, nested as it nests them.
	parents := map[string]string{"testsuites": "", "testsuite": "testsuites", "testcase": "testsuite", "failure": "testcase", "skipped": "testcase"}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, raw)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			want, known := parents[el.Name.Local]
			if !known || want != parent {
				t.Errorf("<%s> inside <%s>: not of the JUnit schema", el.Name.Local, parent)
			}
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}

	var back JUnitSuites
	if err := xml.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	back.XMLName = xml.Name{}
	doc.XMLName = xml.Name{}
	if diff := cmp.Diff(*doc, back); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}

	if doc.Tests != 7 || doc.Failures != 2 || doc.Skipped != 3 {
		t.Errorf("totals: %d tests, %d failures, %d skipped; want 7, 2, 3", doc.Tests, doc.Failures, doc.Skipped)
	}
	sim := back.Suites[0]
	if sim.Tests != 3 || sim.Failures != 1 || sim.Skipped != 1 {
		t.Errorf("sim suite: %+v", sim)
	}
	c := sim.Cases[1]
	if c.Classname != "fast-fail" || c.Name != "least-inflight: error_ratio < 0.15" {
		t.Errorf("case named %q / %q", c.Classname, c.Name)
	}
	if c.Failure == nil || c.Failure.Message != "error_ratio got 0.4271, want < 0.15" {
		t.Errorf("failure: %+v", c.Failure)
	}
	if sk := sim.Cases[2].Skipped; sk == nil || !strings.Contains(sk.Message, "p2c was not run") || sim.Cases[2].Failure != nil {
		t.Errorf("missing strategy: %+v", sim.Cases[2])
	}
	if sim.Cases[0].Failure != nil || sim.Cases[0].Skipped != nil {
		t.Errorf("passed expectation: %+v", sim.Cases[0])
	}
	adv := back.Suites[1]
	if adv.Failures != 0 || adv.Skipped != 2 || adv.Cases[1].Skipped == nil || !strings.Contains(adv.Cases[1].Skipped.Message, "advisory") {
		t.Errorf("advisory suite: %+v", adv)
	}
	if f := back.Suites[2].Cases[0].Failure; f == nil || !strings.Contains(f.Message, "got 0.4271 (the median of 3 repetitions)") {
		t.Errorf("repeated run's failure: %+v", f)
	}
}

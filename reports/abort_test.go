package reports

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"
)

// TestAbortIsReported: an aborted run says what tripped, where and when,
// in report.md, the terminal table and summary.json.
func TestAbortIsReported(t *testing.T) {
	s := sampleSummary()
	name := s.Strategies[0].Name
	s.Strategies = s.Strategies[:1]
	s.Strategies[0].Partial = true
	s.Abort = &Abort{Metric: "error_ratio", Op: ">", Threshold: 0.5, WindowS: 10, Value: 0.97, Requests: 29000,
		Strategy: name, AtS: 12, Skipped: []string{"p2c", "random"}}
	want := "ABORTED: error_ratio 0.97 > 0.5 over 10s in " + name + " at 12.0s; the load stopped and every fault was healed; 2 strategies not run."

	var md, table bytes.Buffer
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "> **"+mdText(want)+"**") {
		t.Errorf("report.md lacks the abort line %q:\n%s", want, head(md.String()))
	}
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), want+"\n") {
		t.Errorf("table lacks the abort line %q:\n%s", want, table.String())
	}
	if page := writeHTML(t, s, nil, nil); !strings.Contains(page, `<div class="partial-banner" role="alert">`+html.EscapeString(want)+`</div>`) {
		t.Errorf("report.html lacks the abort banner %q", want)
	}
	var cmpOut bytes.Buffer
	if err := WriteComparison(&cmpOut, s, sampleSummary()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cmpOut.String(), "was aborted (error_ratio 0.97 > 0.5 over 10s in "+name+" at 12.0s)") {
		t.Errorf("lbchaos compare does not say the run was aborted:\n%s", cmpOut.String())
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Abort == nil || back.Abort.Text() != s.Abort.Text() || len(back.Abort.Skipped) != 2 {
		t.Errorf("summary.json round trip: abort %+v", back.Abort)
	}

	s.Abort = nil
	md.Reset()
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "ABORTED") {
		t.Error("a run that was not aborted says ABORTED")
	}
}

// head is the first lines of s, for messages.
func head(s string) string {
	lines := strings.SplitN(s, "\n", 12)
	return strings.Join(lines[:min(len(lines), 11)], "\n")
}

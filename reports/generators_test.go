package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportsSayGeneratorsAreBalancers: with more than one load generator
// both reports say what it means for client-side strategies; with one they
// say nothing of it.
func TestReportsSayGeneratorsAreBalancers(t *testing.T) {
	const phrase = "4 independent client-side balancers"
	for _, gens := range []int{0, 4} {
		s := sampleSummary()
		s.Generators = gens
		var md, html bytes.Buffer
		if err := WriteMarkdown(&md, s, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&html, s, nil, nil); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"report.md": md.String(), "report.html": html.String()} {
			if got := strings.Contains(out, phrase); got != (gens > 1) {
				t.Errorf("generators %d: %s says %q: %v", gens, name, phrase, got)
			}
			if gens > 1 && !strings.Contains(out, "proxy strategies are unaffected") {
				t.Errorf("%s does not say proxy strategies are unaffected", name)
			}
		}
	}
}

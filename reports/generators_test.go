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

func TestCompareNamesTheGenerators(t *testing.T) {
	a, b := sampleSummary(), sampleSummary()
	b.Generators = 4
	var out bytes.Buffer
	if err := WriteComparison(&out, a, b); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(out.String(), "\n", 3)
	if strings.Contains(lines[0], "generators") || !strings.Contains(lines[1], ", 4 generators, seed") {
		t.Errorf("run lines %q, want only B's to name its 4 generators", lines[:2])
	}
	if want := "NOTE: the runs had 1 and 4 load generators: a client-side strategy ran as that many independent balancers"; !strings.Contains(out.String(), want) {
		t.Errorf("comparison lacks %q", want)
	}
}

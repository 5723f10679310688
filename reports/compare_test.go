package reports

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteComparisonGolden(t *testing.T) {
	a := sampleSummary()
	b := sampleSummary()
	b.Engine, b.Backends = "sim", "sim"
	b.Strategies[0].ErrorRatio += 0.01
	b.Strategies[0].LatencyMs.P99 *= 2
	b.Strategies = b.Strategies[:len(b.Strategies)-1] // one strategy only in A
	var buf bytes.Buffer
	if err := WriteComparison(&buf, a, b); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare.golden", buf.Bytes())
	out := buf.String()
	if !strings.Contains(out, "+1.00 pp") || !strings.Contains(out, "+100.0%") {
		t.Errorf("differences missing:\n%s", out)
	}
	if !strings.Contains(out, "—") {
		t.Errorf("a strategy missing from B is not marked:\n%s", out)
	}
}

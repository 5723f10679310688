package reports

import (
	"bytes"
	"strings"
	"testing"
)

func TestAgrees(t *testing.T) {
	tests := []struct {
		name        string
		sim, real   float64
		ratio, want bool
	}{
		{"within 10% of the real value", 0.33, 0.35, true, true},
		{"beyond 10% and 0.5 points", 0.30, 0.35, true, false},
		{"a small ratio within 0.5 points", 0.004, 0.0005, true, true},
		{"a latency has no absolute margin", 0.004, 0.0005, false, false},
		{"a latency within 10%", 105, 100, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Agrees(tt.sim, tt.real, tt.ratio); got != tt.want {
				t.Errorf("Agrees(%v, %v, %v) = %v, want %v", tt.sim, tt.real, tt.ratio, got, tt.want)
			}
		})
	}
}

func TestReportShowsSimVsReal(t *testing.T) {
	real := sampleSummary()
	s := sampleSummary()
	s.Engine, s.Backends = "sim", "sim"
	s.CalibratedFrom = NewCalibration("results/fast-fail/real", 0.5, real)
	s.Strategies[0].FaultyShare = real.Strategies[0].FaultyShare + 0.2
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"report.md": md.String(), "report.html": html.String()} {
		if !strings.Contains(out, "Sim vs real") || !strings.Contains(out, "results/fast-fail/real") || !strings.Contains(out, "faulty share % real") {
			t.Errorf("%s has no sim vs real section naming the real run", name)
		}
		if !strings.Contains(out, "≠") {
			t.Errorf("%s marks no disagreement", name)
		}
	}
	s.CalibratedFrom = nil
	md.Reset()
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Sim vs real") {
		t.Error("an uncalibrated run's report has a sim vs real section")
	}
}

package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// saturatedHarness is a harness that saturated from second 3 of 5.
func saturatedHarness() *Harness {
	from := 3.0
	machine := 2.0
	h := &Harness{
		Cores: 2, MachineCPUs: 2, BackendsInProcess: true, TickMs: 2, CPUCoresP50: 1.1, CPUCoresMax: 1.99,
		SchedLagMs: LagStats{P50: 0.3, P99: 14, Max: 40},
		Saturated:  true, SaturatedFromS: &from, SaturatedSeconds: 2,
		Reasons: []string{"CPU 1.98 of 2 cores", "scheduler 14 ms late at p99", "requests sent up to 850 ms behind schedule"},
	}
	for k := range 5 {
		h.Seconds = append(h.Seconds, HarnessSecond{TS: k, CPUCores: 0.5, MachineCores: &machine, Sent: 4000, Saturated: k >= 3})
	}
	return h
}

func TestHarnessSaturationOpensEveryReport(t *testing.T) {
	s := sampleSummary()
	s.DurationS = 5
	for i := range s.Strategies {
		s.Strategies[i].ElapsedS = 5
		s.Strategies[i].Harness = &Harness{Cores: 2, Seconds: []HarnessSecond{{TS: 0}}}
	}
	s.Strategies[1].Harness = saturatedHarness()
	name := s.Strategies[1].Name
	want := "The harness saturated: from 3 s on (2 saturated seconds of 5), " + name + "'s numbers describe this machine's load generator, not the strategy " +
		"(CPU 1.98 of 2 cores; scheduler 14 ms late at p99; requests sent up to 850 ms behind schedule). " +
		"The backends ran in the harness's process and shared its CPU."

	got := HarnessSaturations(s)
	if d := cmp.Diff([]HarnessSaturation{{Strategy: name, FromS: 3, Summary: want}}, got); d != "" {
		t.Fatalf("HarnessSaturations (-want +got):\n%s", d)
	}
	s.HarnessSaturated = got

	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(md.String(), "\n")
	if first := strings.Join(lines[:6], "\n"); !strings.Contains(first, "> **"+mdText(want)+"**") {
		t.Errorf("report.md does not open with the saturation:\n%s", first)
	}

	var html bytes.Buffer
	if err := WriteHTML(&html, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	if i, j := strings.Index(page, "The harness saturated: from 3 s on"), strings.Index(page, `id="verdict"`); i < 0 || i > j {
		t.Errorf("report.html: banner at %d, verdict at %d", i, j)
	}

	// One second only, at the attack's end.
	one := saturatedHarness()
	one.SaturatedSeconds = 1
	if got := harnessSentence(&Strategy{Name: "p2c", ElapsedS: 4.5, Harness: one}); !strings.HasPrefix(got, "The harness saturated: from 3 s on (1 saturated second of 5), p2c's numbers") {
		t.Errorf("one saturated second: %q", got)
	}

	var table bytes.Buffer
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(table.String(), "\n"); first != want {
		t.Errorf("terminal table opens with %q, want %q", first, want)
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(js.String(), `"harness_saturated"`), strings.Index(js.String(), `"strategies"`); i < 0 || i > j {
		t.Errorf("summary.json: harness_saturated at %d, strategies at %d", i, j)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s.Strategies[1].Harness, back.Strategies[1].Harness); d != "" {
		t.Errorf("harness after a JSON round trip (-want +got):\n%s", d)
	}
}

func TestHealthyHarnessAddsNothing(t *testing.T) {
	s := sampleSummary()
	for i := range s.Strategies {
		s.Strategies[i].Harness = &Harness{Cores: 2, Seconds: []HarnessSecond{{TS: 0, CPUCores: 0.4}}}
	}
	if got := HarnessSaturations(s); got != nil {
		t.Errorf("HarnessSaturations = %+v, want none", got)
	}
	var md, table bytes.Buffer
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"report.md": md.String(), "table": table.String()} {
		if strings.Contains(text, "harness saturated") {
			t.Errorf("%s names a saturated harness", name)
		}
	}
	// The harness section is in summary.json, the top-level list is not.
	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["harness_saturated"]; ok {
		t.Error("harness_saturated present without a saturated harness")
	}
	st := doc["strategies"].([]any)[0].(map[string]any)
	if h, ok := st["harness"].(map[string]any); !ok || h["saturated"] != false {
		t.Errorf("strategies[0].harness = %v, want a section with saturated false", st["harness"])
	}
}

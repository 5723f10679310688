package reports

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEjectionSpans(t *testing.T) {
	ev := func(t float64, id int, kind string) Event { return Event{TimeS: t, Instance: id, Kind: kind} }
	for _, tc := range []struct {
		name   string
		events []Event
		want   map[int][][2]float64
	}{
		{"none", nil, map[int][][2]float64{}},
		{"eject and readmit", []Event{ev(1, 0, "eject"), ev(6, 0, "readmit"), ev(7, 0, "eject"), ev(12, 0, "readmit")},
			map[int][][2]float64{0: {{1, 6}, {7, 12}}}},
		{"still ejected at the end", []Event{ev(25, 3, "eject")}, map[int][][2]float64{3: {{25, 30}}}},
		{"unsorted, two instances", []Event{ev(6, 1, "readmit"), ev(2, 2, "eject"), ev(1, 1, "eject"), ev(4, 2, "readmit")},
			map[int][][2]float64{1: {{1, 6}}, 2: {{2, 4}}}},
		{"repeated eject and stray readmit", []Event{ev(0.5, 0, "readmit"), ev(1, 0, "eject"), ev(2, 0, "eject"), ev(3, 0, "readmit")},
			map[int][][2]float64{0: {{1, 3}}}},
		{"eject after the end", []Event{ev(31, 0, "eject")}, map[int][][2]float64{0: {{31, 31}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ejectionSpans(tc.events, 30)); d != "" {
				t.Errorf("spans (-want +got):\n%s", d)
			}
		})
	}
}

func TestHealthFigureOnlyWithEjections(t *testing.T) {
	s := sampleSummary()
	for i, want := range []bool{false, false, true} {
		if got := healthFigure(s, &s.Strategies[i]) != nil; got != want {
			t.Errorf("%s: health figure %v, want %v", s.Strategies[i].Name, got, want)
		}
	}
	st := Strategy{Name: "x", Events: []Event{{TimeS: 1, Instance: 0, Kind: "readmit"}}}
	if healthFigure(s, &st) != nil {
		t.Error("health figure without an ejection")
	}
}

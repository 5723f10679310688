package reports

import (
	"strings"
	"testing"
)

// A tiered run's report has a tiers table, its fair share and even split
// of the first tier's instances, the client's.
func TestTiersInReport(t *testing.T) {
	tiers := func(a, b float64) []Tier {
		return []Tier{
			{Name: "a", Instances: []int{0, 1}, PerClientRequest: a, ErrorRatio: 1},
			{Name: "b", Instances: []int{2, 3, 4}, PerClientRequest: b, ErrorRatio: 1},
		}
	}
	s := &Summary{Experiment: "t", Engine: "sim", Instances: 5, FaultyInstances: []int{2, 3, 4}, Strategies: []Strategy{
		{Name: "round-robin", Requests: 10, Instances: make([]Instance, 5), Tiers: tiers(1, 1)},
		{Name: "round-robin+retry(attempts=3)", Requests: 10, Instances: make([]Instance, 5), Tiers: tiers(3, 9)},
	}}
	var md strings.Builder
	if err := WriteMarkdown(&md, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### Tiers",
		"| strategy | a req/client req | a error % | b req/client req | b error % |",
		"| round-robin+retry(attempts=3) | 3 | 100.00 | 9 | 100.00 |",
		"each instance gets 1/2 = 50.00% of the requests",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "Fair share of the faulty") {
		t.Error("fair share given for faulty instances outside the client's tier")
	}
}

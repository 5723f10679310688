package reports

import "fmt"

// tiersNote heads the report's tiers table.
const tiersNote = "Requests each tier received per client request, retries included (summary.json's tiers[].per_client_request), and the share of them that failed: " +
	"with every tier retrying, the attempts multiply down the tiers."

// tiersTable has one row per strategy of a tiered run: each tier's
// requests per client request and error share; nil without tiers.
func tiersTable(s *Summary) *table {
	var tiers []Tier
	for _, st := range s.Strategies {
		if len(st.Tiers) > len(tiers) {
			tiers = st.Tiers
		}
	}
	if len(tiers) == 0 {
		return nil
	}
	t := &table{Columns: []column{{Head: "strategy"}}}
	for _, tier := range tiers {
		t.Columns = append(t.Columns,
			column{Head: tier.Name + " req/client req", Title: fmt.Sprintf("requests tier %s received per client request", tier.Name), Num: true},
			column{Head: tier.Name + " error %", Title: fmt.Sprintf("the share of tier %s's requests that failed", tier.Name), Num: true})
	}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		r := []cell{{Text: st.Name, Name: true}}
		for k := range tiers {
			if k >= len(st.Tiers) {
				r = append(r, cell{Text: "—", Num: true}, cell{Text: "—", Num: true})
				continue
			}
			r = append(r, cell{Text: fmt.Sprintf("%.3g", st.Tiers[k].PerClientRequest), Num: true}, cell{Text: fmtPct(st.Tiers[k].ErrorRatio), Num: true})
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// edgeIDs are the instances a tiered run's client balances over, its
// first tier's; nil without tiers.
func edgeIDs(s *Summary) []int {
	if len(s.Strategies) > 0 && len(s.Strategies[0].Tiers) > 0 {
		return s.Strategies[0].Tiers[0].Instances
	}
	return nil
}

// edgeCount is how many instances the client balances over: a tiered
// run's first tier, else every instance.
func edgeCount(s *Summary) int {
	if edge := edgeIDs(s); edge != nil {
		return len(edge)
	}
	return instanceCount(s)
}

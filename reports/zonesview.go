package reports

import "fmt"

// zonesNote heads the report's zones table.
const zonesNote = "Where each zone's clients' requests went and how they fared (summary.json's zones and cross_zone_share): " +
	"local % is the share of a zone's requests served in that zone, received % the share of all requests its instances received."

// zonesTable has one row per strategy and zone of a run with zones: the
// zone's share of the clients, where its requests went, what its
// instances received, and its clients' errors and p99; nil without zones.
func zonesTable(s *Summary) *table {
	zoned := false
	for _, st := range s.Strategies {
		zoned = zoned || len(st.Zones) > 0
	}
	if !zoned {
		return nil
	}
	t := &table{Columns: []column{
		{Head: "strategy"},
		{Head: "zone"},
		{Head: "clients %", Title: "the zone's share of the clients, as the experiment gives it", Num: true},
		{Head: "local %", Title: "the share of the zone's clients' requests that its own instances served", Num: true},
		{Head: "received %", Title: "the share of all requests to instances that the zone's instances received, from every zone", Num: true},
		{Head: "error %", Title: "the share of the zone's clients' requests that failed", Num: true},
		{Head: "p99 ms", Title: "the 99th percentile latency of the zone's clients' requests", Num: true},
		{Head: "cross-zone %", Title: "the share of the strategy's requests that crossed zones", Num: true},
	}}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		cross := "—"
		if st.CrossZoneShare != nil {
			cross = fmtPct(*st.CrossZoneShare)
		}
		for _, z := range st.Zones {
			p99 := "—"
			if z.LatencyMs != nil {
				p99 = fmt.Sprintf("%.3g", z.LatencyMs.P99)
			}
			t.Rows = append(t.Rows, []cell{
				{Text: st.Name, Name: true}, {Text: z.Name},
				{Text: fmtPct(z.ClientsShare), Num: true}, {Text: fmtPct(z.LocalShare), Num: true},
				{Text: fmtPct(z.ReceivedShare), Num: true}, {Text: fmtPct(z.ErrorRatio), Num: true},
				{Text: p99, Num: true}, {Text: cross, Num: true},
			})
		}
	}
	return t
}

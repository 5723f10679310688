package reports

import (
	"strings"
	"testing"
)

func TestDeriveRotation(t *testing.T) {
	st := &Strategy{Name: "kube:service", Timeline: &Timeline{BucketS: 1, Instances: []InstanceSeries{
		{ID: 0, Requests: []int64{40, 40, 40, 12, 0, 0}},
		{ID: 1, Requests: []int64{40, 40, 40, 40, 40, 40}},
	}}}
	events := []Event{
		{TimeS: 1.5, Instance: 0, Kind: "not-ready"}, // before the fault: not its
		{TimeS: 3.4, Instance: 0, Kind: "not-ready"},
		{TimeS: 3.6, Instance: 0, Kind: "endpoint-out"},
		{TimeS: 3.0, Instance: 1, Kind: "endpoint-out"},
	}
	DeriveRotation(st, events, map[int]float64{0: 2, 1: 0})
	if len(st.Rotation) != 2 {
		t.Fatalf("rotation %+v, want a row per faulty instance", st.Rotation)
	}
	r := st.Rotation[0]
	if r.Instance != 0 || r.NotReadyS == nil || *r.NotReadyS < 1.39 || *r.NotReadyS > 1.41 ||
		r.EndpointOutS == nil || *r.EndpointOutS < 1.59 || *r.EndpointOutS > 1.61 || r.NoTrafficS == nil || *r.NoTrafficS != 2 {
		t.Errorf("instance 0: %+v (not ready %v, endpoint out %v, no traffic %v), want 1.4, 1.6, 2", r, deref(r.NotReadyS), deref(r.EndpointOutS), deref(r.NoTrafficS))
	}
	if r := st.Rotation[1]; r.NotReadyS != nil || r.NoTrafficS != nil || r.EndpointOutS == nil || *r.EndpointOutS != 3 {
		t.Errorf("instance 1: %+v, want only endpoint out at 3", r)
	}
	tab := rotationTable(&Summary{Strategies: []Strategy{*st}})
	if tab == nil || len(tab.Rows) != 2 || !strings.Contains(tab.Rows[1][3].Text, "—") {
		t.Errorf("table %+v, want two rows, a dash where a step did not happen", tab)
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

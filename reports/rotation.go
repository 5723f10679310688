package reports

import (
	"fmt"
	"maps"
	"slices"
)

// OutOfRotation is, for an instance behind a Kubernetes Service that a
// fault hit, how long each step took until the Service stopped sending it
// traffic: the figure a team tunes its readiness probe for. Times are
// seconds after the fault began; nil when the step did not happen before
// the attack ended.
type OutOfRotation struct {
	Instance int     `json:"instance"` // the instance id
	FaultS   float64 `json:"fault_s"`  // when its fault began, from the attack's start
	// NotReadyS: its pod's Ready condition turned false (the kubelet's
	// readiness probe failed failure_threshold times, or the pod went).
	NotReadyS *float64 `json:"not_ready_s,omitempty"`
	// EndpointOutS: the Service's EndpointSlice stopped listing it ready.
	EndpointOutS *float64 `json:"endpoint_out_s,omitempty"`
	// NoTrafficS: the start of the first whole second, from the fault on,
	// in which it was sent no request (kube-proxy had dropped it, and no
	// kept-alive connection still led to it).
	NoTrafficS *float64 `json:"no_traffic_s,omitempty"`
}

// DeriveRotation sets st.Rotation from events (not-ready and
// endpoint-out, its events as measured) and its timeline, for each
// instance whose fault began at faultAt[id] (seconds from the attack's
// start).
func DeriveRotation(st *Strategy, events []Event, faultAt map[int]float64) {
	st.Rotation = nil
	for _, id := range slices.Sorted(maps.Keys(faultAt)) {
		at := faultAt[id]
		r := OutOfRotation{Instance: id, FaultS: at}
		for _, e := range events {
			if e.Instance != id || e.TimeS < at {
				continue
			}
			d := e.TimeS - at
			switch {
			case e.Kind == "not-ready" && r.NotReadyS == nil:
				r.NotReadyS = &d
			case e.Kind == "endpoint-out" && r.EndpointOutS == nil:
				r.EndpointOutS = &d
			}
		}
		if tl := st.Timeline; tl != nil && tl.BucketS > 0 {
			for _, s := range tl.Instances {
				if s.ID != id {
					continue
				}
				for k, n := range s.Requests {
					t := float64(k) * tl.BucketS
					if t >= at && n == 0 {
						d := t - at
						r.NoTrafficS = &d
						break
					}
				}
			}
		}
		st.Rotation = append(st.Rotation, r)
	}
}

// rotationNote heads the report's out-of-rotation table.
const rotationNote = "For each instance a fault hit behind a Kubernetes Service: seconds from the fault until its pod turned not ready (the kubelet's readiness probe), until the Service's EndpointSlice dropped it, and until the first whole second in which it got no request (summary.json's rotation[]). A dash: it did not happen before the attack ended (the probe's path stayed healthy, as a fast-failing dependency leaves it)."

// rotationTable has one row per strategy and faulty instance behind a
// Service; nil when no strategy has any.
func rotationTable(s *Summary) *table {
	t := &table{Columns: []column{{Head: "strategy"}, {Head: "instance", Num: true}, {Head: "fault at s", Num: true},
		{Head: "→ not ready s", Title: "seconds from the fault until the pod's Ready condition turned false", Num: true},
		{Head: "→ endpoint out s", Title: "seconds from the fault until the EndpointSlice stopped listing it ready", Num: true},
		{Head: "→ no traffic s", Title: "seconds from the fault until the first whole second without a request to it", Num: true}}}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		for _, r := range st.Rotation {
			t.Rows = append(t.Rows, []cell{{Text: st.Name, Name: true}, {Text: fmt.Sprint(r.Instance), Num: true},
				{Text: fmt.Sprintf("%.1f", r.FaultS), Num: true}, secs(r.NotReadyS), secs(r.EndpointOutS), secs(r.NoTrafficS)})
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

func secs(v *float64) cell {
	if v == nil {
		return cell{Text: "—", Num: true}
	}
	return cell{Text: fmt.Sprintf("%.1f", *v), Num: true}
}

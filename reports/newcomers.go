package reports

import "math"

// newcomerShare is the share of st's requests sent to the instances that
// joined its host set during the run (its "join" events); NaN when none
// joined.
func newcomerShare(st *Strategy) float64 {
	joined := map[int]bool{}
	for _, e := range st.Events {
		if e.Kind == "join" {
			joined[e.Instance] = true
		}
	}
	if len(joined) == 0 {
		return math.NaN()
	}
	share := 0.0
	for _, in := range st.Instances {
		if joined[in.ID] {
			share += in.Share
		}
	}
	return share
}

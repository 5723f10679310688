package strategies

import "testing"

// TestPreferCloseShares checks Kubernetes' PreferClose: the client's zone
// while it has a ready (healthy) host, else every ready host.
func TestPreferCloseShares(t *testing.T) {
	const spec = "random+healthcheck(fall=1)+prefer-close"
	tests := []struct {
		name    string
		layout  string
		local   string
		clients map[string]float64
		down    []int
		want    map[string]float64
	}{
		{"local zone", "a:2,b:4,c:2", "a", nil, nil, map[string]float64{"a": 1}},
		{"local zone with one host left", "a:2,b:4,c:2", "a", nil, []int{0}, map[string]float64{"a": 1}},
		{"local zone all down: every ready host", "a:2,b:4,c:2", "a", nil, []int{0, 1}, map[string]float64{"b": 4.0 / 6, "c": 2.0 / 6}},
		{"nothing ready: every host", "a:2,b:2", "a", nil, []int{0, 1, 2, 3}, map[string]float64{"a": 0.5, "b": 0.5}},
		{"local zone without hosts", "a:2,b:2", "c", map[string]float64{"a": 1, "b": 1, "c": 1}, nil, map[string]float64{"a": 0.5, "b": 0.5}},
		// No balance check: most clients in a, one host there, all theirs.
		{"no balance check", "a:1,b:9", "a", map[string]float64{"a": 90, "b": 10}, nil, map[string]float64{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := zoneEnv(tt.layout, tt.local, tt.clients)
			b := newChecked(t, spec, env, "")
			markDown(b, tt.down...)
			shares := pickShares(t, b, env.N, zonePicks)
			checkZoneShares(t, byZone(shares, env.Zones), tt.want)
		})
	}
}

// Composition with eject: an ejected local host is not ready; the others
// of the zone take its share, and with the whole zone ejected the picks
// go to the other zones.
func TestPreferCloseOverEject(t *testing.T) {
	env := zoneEnv("a:3,b:3", "a", nil)
	b := newChecked(t, "round-robin+eject(consecutive=1,max=1,success_rate=false)+prefer-close", env, "")
	ejectByPicks(t, b, 0)
	shares := pickShares(t, b, env.N, 10_000)
	if shares[0] != 0 || shares[1] != 0.5 || shares[2] != 0.5 {
		t.Errorf("shares %v, want hosts 1 and 2 half each", shares)
	}
	ejectByPicks(t, b, 1, 2)
	shares = pickShares(t, b, env.N, 9_000)
	checkZoneShares(t, byZone(shares, env.Zones), map[string]float64{"b": 1})
}

package strategies

import (
	"math"
	"testing"
)

// TestPriorityFailoverShares checks the share of picks of each level (the
// local zone a, the remote zones b and c) under Envoy's priority rules,
// with hosts marked down by a healthcheck(fall=1) inside.
func TestPriorityFailoverShares(t *testing.T) {
	const (
		hundredA = "a:100,b:10"
		spec     = "random+healthcheck(fall=1)+priority-failover"
	)
	tests := []struct {
		name   string
		spec   string
		layout string
		local  string
		down   []int
		want   map[string]float64
		load0  int // percent of the picks priority 0 gets
	}{
		{"all healthy: all local", spec, hundredA, "a", nil, map[string]float64{"a": 1}, 100},
		{"P0 72% healthy: 100%", spec, hundredA, "a", span(0, 28), map[string]float64{"a": 1}, 100},
		{"P0 71% healthy: 99%", spec, hundredA, "a", span(0, 29), map[string]float64{"a": 0.99, "b": 0.01}, 99},
		{"P0 50% healthy: 70%", spec, hundredA, "a", span(0, 50), map[string]float64{"a": 0.70, "b": 0.30}, 70},
		{"P0 all down: all to P1", spec, hundredA, "a", span(0, 100), map[string]float64{"b": 1}, 0},
		{"overprovisioning=1: P0 72% healthy gets 72%", "random+healthcheck(fall=1)+priority-failover(overprovisioning=1)", hundredA, "a", span(0, 28),
			map[string]float64{"a": 0.72, "b": 0.28}, 72},
		{"overprovisioning=2: P0 50% healthy gets 100%", "random+healthcheck(fall=1)+priority-failover(overprovisioning=2)", hundredA, "a", span(0, 50),
			map[string]float64{"a": 1}, 100},
		// Health 14 and 84, T 98: P0 gets ⌊14·100/98⌋ = 14, P1 min(86,
		// ⌊84·100/98⌋ = 85), and the 1 left goes to P0.
		{"normalised below 100", spec, hundredA, "a", append(span(0, 90), 100, 101, 102, 103), map[string]float64{"a": 0.15, "b": 0.85}, 15},
		// Health 42 and 56, T 98, both below 50% healthy: total panic,
		// the levels share by host count: P1 ⌊100·10/110⌋ = 9, P0 the rest.
		{"total panic: by host count", spec, hundredA, "a", append(span(0, 70), 100, 101, 102, 103, 104, 105), map[string]float64{"a": 0.91, "b": 0.09}, 91},
		{"remote zones form one level", spec, "a:10,b:5,c:5", "a", span(0, 6), // 40% healthy: health 56
			map[string]float64{"a": 0.56, "b": 0.22, "c": 0.22}, 56},
		{"local zone without hosts: all to P1", "random+priority-failover", "a:5,b:5", "c", nil, map[string]float64{"a": 0.5, "b": 0.5}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clients := map[string]float64{"a": 1, "b": 1, "c": 1}
			env := zoneEnv(tt.layout, tt.local, clients)
			b := newChecked(t, tt.spec, env, "")
			markDown(b, tt.down...)
			shares := pickShares(t, b, env.N, zonePicks)
			if got := b.picker.(*priorityFailover).load0; got != tt.load0 {
				t.Errorf("priority 0 gets %d%% of the picks, want %d%%", got, tt.load0)
			}
			checkZoneShares(t, byZone(shares, env.Zones), tt.want)
		})
	}
}

// A level in panic gets all its hosts: with an eject inside whose own
// panic threshold lets it, its ejected hosts are picked too.
func TestPriorityFailoverLevelPanic(t *testing.T) {
	env := zoneEnv("a:10,b:10", "a", nil)
	b := newChecked(t, "random+eject(consecutive=1,max=1,panic=0.5,success_rate=false)+priority-failover", env, "")
	// P0: 1 of 10 healthy, health 14; P1: 6 of 10, health 84; T 98.
	// P0 is in panic (10% < 50%) and gets 15% over all its 10 hosts; P1
	// is not, and gets 85% over its 6 healthy hosts.
	ejectByPicks(t, b, span(0, 9)...)
	ejectByPicks(t, b, 10, 11, 12, 13)
	shares := pickShares(t, b, env.N, zonePicks)
	for ep, s := range shares {
		want := 0.015
		switch {
		case ep >= 10 && ep < 14:
			want = 0
		case ep >= 14:
			want = 0.85 / 6
		}
		if math.Abs(s-want) > zoneTolerance {
			t.Errorf("endpoint %d: share %.4f, want %.4f", ep, s, want)
		}
	}
}

// Composition with eject: ejected hosts of the local zone lower its
// health and move traffic to the other level.
func TestPriorityFailoverOverEject(t *testing.T) {
	env := zoneEnv("a:4,b:4", "a", nil)
	b := newChecked(t, "p2c+eject(consecutive=1,max=0.5,success_rate=false)+priority-failover", env, "")
	ejectByPicks(t, b, 0, 1) // P0 50% healthy: health 70
	shares := pickShares(t, b, env.N, zonePicks)
	if shares[0] > 0 || shares[1] > 0 {
		t.Errorf("ejected hosts got %.4f and %.4f of the picks", shares[0], shares[1])
	}
	checkZoneShares(t, byZone(shares, env.Zones), map[string]float64{"a": 0.70, "b": 0.30})
}

package strategies

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestZoneAwareShares checks the share of picks each zone gets, over
// 100,000 picks, under Envoy's rules.
func TestZoneAwareShares(t *testing.T) {
	l404020 := map[string]float64{"a": 40, "b": 40, "c": 20}
	tests := []struct {
		name    string
		spec    string
		layout  string
		local   string
		clients map[string]float64
		down    []int // marked down by a healthcheck(fall=1) inside
		want    map[string]float64
	}{
		// L 40/40/20, U 25/50/25: a keeps U/L = 62.5%; the rest goes to
		// the zones with residual capacity, b (50−40) and c (25−20), 2:1.
		{"worked example from a", "random+zone-aware", "a:2,b:4,c:2", "a", l404020, nil,
			map[string]float64{"a": 0.625, "b": 0.25, "c": 0.125}},
		{"worked example from b: U ≥ L, all local", "random+zone-aware", "a:2,b:4,c:2", "b", l404020, nil,
			map[string]float64{"b": 1}},
		{"worked example from c: U ≥ L, all local", "random+zone-aware", "a:2,b:4,c:2", "c", l404020, nil,
			map[string]float64{"c": 1}},
		{"shares as fractions", "random+zone-aware", "a:2,b:4,c:2", "a", map[string]float64{"a": 0.4, "b": 0.4, "c": 0.2}, nil,
			map[string]float64{"a": 0.625, "b": 0.25, "c": 0.125}},
		{"hosts as the clients: all local", "random+zone-aware", "a:4,b:4,c:2", "a", nil, nil,
			map[string]float64{"a": 1}},
		// Unhealthy hosts leave U: a has 4 hosts, 2 down, so U is 25/50/25
		// of the 8 healthy ones, and the healthy share 80% is no panic.
		{"down hosts leave U", "random+healthcheck(fall=1)+zone-aware", "a:4,b:4,c:2", "a", l404020, []int{0, 1},
			map[string]float64{"a": 0.625, "b": 0.25, "c": 0.125}},
		{"a local zone all down spills everything", "random+healthcheck(fall=1)+zone-aware", "a:2,b:5,c:3", "a", l404020, []int{0, 1},
			// U 0/62.5/37.5: residual b 22.5, c 17.5.
			map[string]float64{"b": 22.5 / 40, "c": 17.5 / 40}},
		{"min_cluster_size not met: every healthy host", "random+zone-aware", "a:1,b:3,c:1", "a", l404020, nil,
			map[string]float64{"a": 0.2, "b": 0.6, "c": 0.2}},
		{"min_cluster_size met", "random+zone-aware(min_cluster_size=5)", "a:1,b:3,c:1", "a", l404020, nil,
			// U 20/60/20: a keeps 50%; residual b 20, c 0.
			map[string]float64{"a": 0.5, "b": 0.5}},
		{"min_cluster_size counts healthy hosts", "random+healthcheck(fall=1)+zone-aware", "a:2,b:4,c:2", "a", l404020, []int{2, 3, 4},
			// 5 healthy of 8 < 6: uniform over the healthy a a b c c.
			map[string]float64{"a": 0.4, "b": 0.2, "c": 0.4}},
		{"routing_enabled=50", "random+zone-aware(routing_enabled=50)", "a:2,b:4,c:2", "a", l404020, nil,
			// Half the picks by zone (62.5/25/12.5), half over every host (25/50/25).
			map[string]float64{"a": 0.4375, "b": 0.375, "c": 0.1875}},
		{"routing_enabled=0", "random+zone-aware(routing_enabled=0)", "a:2,b:4,c:2", "a", l404020, nil,
			map[string]float64{"a": 0.25, "b": 0.5, "c": 0.25}},
		{"one zone among the hosts", "random+zone-aware", "a:6", "a", map[string]float64{"a": 1, "b": 1}, nil,
			map[string]float64{"a": 1}},
		{"local zone without hosts", "random+zone-aware", "a:4,b:4", "c", map[string]float64{"a": 1, "b": 1, "c": 2}, nil,
			map[string]float64{"a": 0.5, "b": 0.5}},
		{"clients in one zone only", "random+zone-aware", "a:2,b:4,c:2", "a", map[string]float64{"a": 1}, nil,
			map[string]float64{"a": 0.25, "b": 0.5, "c": 0.25}},
		{"clients in a zone without hosts count in L", "random+zone-aware", "a:3,b:3", "a", map[string]float64{"a": 1, "b": 1, "c": 2}, nil,
			// L 25/25/50, U 50/50: U ≥ L.
			map[string]float64{"a": 1}},
		// 4 of 10 healthy < 50%: panic, every host given; the healthcheck
		// inside still hides its down hosts, so the healthy 4 share it.
		{"panic: no zone logic", "random+healthcheck(fall=1)+zone-aware", "a:4,b:4,c:2", "a", l404020, []int{0, 1, 2, 4, 5, 6},
			map[string]float64{"a": 0.25, "b": 0.25, "c": 0.5}},
		{"half healthy is no panic", "random+healthcheck(fall=1)+zone-aware(min_cluster_size=1)", "a:4,b:4,c:2", "a", l404020, []int{0, 1, 2, 4, 5},
			// Healthy a b b c c: U 20/40/40 against L 40/40/20: a keeps 50%, the rest to c.
			map[string]float64{"a": 0.5, "c": 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := zoneEnv(tt.layout, tt.local, tt.clients)
			b := newChecked(t, tt.spec, env, "")
			markDown(b, tt.down...)
			shares := pickShares(t, b, env.N, zonePicks)
			for _, ep := range tt.down {
				if shares[ep] > 0 {
					t.Errorf("endpoint %d is down and got %.4f of the picks", ep, shares[ep])
				}
			}
			checkZoneShares(t, byZone(shares, env.Zones), tt.want)
		})
	}
}

// The worked example's numbers, exactly: from a, local with probability
// 25/40, else b and c by residual capacity 10 and 5.
func TestZoneAwareWorkedExample(t *testing.T) {
	env := zoneEnv("a:2,b:4,c:2", "a", map[string]float64{"a": 40, "b": 40, "c": 20})
	b := newChecked(t, "random+zone-aware", env, "")
	pickShares(t, b, env.N, 1)
	za := b.picker.(*zoneAware)
	if za.mode != zoneSpill || math.Abs(za.pLocal-0.625) > 1e-12 {
		t.Fatalf("mode %d, local probability %v; want spill-over with 0.625", za.mode, za.pLocal)
	}
	if len(za.spill) != 2 || za.spill[0] != 1 || za.spill[1] != 2 ||
		math.Abs(za.cum[0]-0.10) > 1e-12 || math.Abs(za.cum[1]-0.15) > 1e-12 {
		t.Errorf("spill zones %v with cumulative capacity %v; want b and c with 0.10 and 0.15", za.spill, za.cum)
	}
}

// In panic every host is passed on: with an eject inside whose own panic
// threshold lets it, ejected hosts are picked again, as in Envoy.
func TestZoneAwarePanicPassesEveryHost(t *testing.T) {
	env := zoneEnv("a:4,b:4,c:2", "a", map[string]float64{"a": 40, "b": 40, "c": 20})
	b := newChecked(t, "random+eject(consecutive=1,max=1,panic=0.5,success_rate=false)+zone-aware", env, "")
	ejectByPicks(t, b, 0, 1, 2, 4, 5, 6)
	za := b.picker.(*zoneAware)
	shares := pickShares(t, b, env.N, zonePicks)
	if za.mode != zonePanic {
		t.Fatalf("mode %d with 4 of 10 healthy, want panic", za.mode)
	}
	for ep, s := range shares {
		if math.Abs(s-0.1) > zoneTolerance {
			t.Errorf("endpoint %d: share %.4f, want 0.1 (every host, ejected or not)", ep, s)
		}
	}
}

// Composition: "p2c+eject+zone-aware" chooses the zone among the hosts
// ejection leaves healthy; p2c picks within it. An ejected host counts as
// unhealthy, moves the zone shares and is never picked; written the other
// way round the zone wrapper sees only the hosts left.
func TestZoneAwareOverEject(t *testing.T) {
	clients := map[string]float64{"a": 40, "b": 40, "c": 20}
	env := zoneEnv("a:4,b:4,c:2", "a", clients)
	b := newChecked(t, "p2c+eject(consecutive=1,max=0.5,success_rate=false)+zone-aware", env, "")
	if got := pickShares(t, b, env.N, 10_000); byZone(got, env.Zones)["a"] != 1 {
		t.Fatalf("before ejections: shares %v, want all in a (U 40 = L 40)", got)
	}
	ejectByPicks(t, b, 0, 1)
	shares := pickShares(t, b, env.N, zonePicks)
	if shares[0] > 0 || shares[1] > 0 {
		t.Errorf("ejected hosts 0 and 1 got %.4f and %.4f of the picks", shares[0], shares[1])
	}
	checkZoneShares(t, byZone(shares, env.Zones), map[string]float64{"a": 0.625, "b": 0.25, "c": 0.125})

	// Re-admission (the ejection time is up) restores the local share.
	env.Clock.(*fakeClock).Advance(31 * time.Second)
	shares = pickShares(t, b, env.N, 10_000)
	checkZoneShares(t, byZone(shares, env.Zones), map[string]float64{"a": 1})

	t.Run("eject outside", func(t *testing.T) {
		env := zoneEnv("a:4,b:4,c:2", "a", clients)
		b := newChecked(t, "p2c+zone-aware+eject(consecutive=1,max=0.5,success_rate=false)", env, "")
		ejectByPicks(t, b, 0, 1)
		// The zone wrapper is given the 8 hosts left, all healthy: the
		// same U, so the same shares, and no ejected host is picked.
		shares := pickShares(t, b, env.N, zonePicks)
		if shares[0] > 0 || shares[1] > 0 {
			t.Errorf("ejected hosts 0 and 1 got %.4f and %.4f of the picks", shares[0], shares[1])
		}
		checkZoneShares(t, byZone(shares, env.Zones), map[string]float64{"a": 0.625, "b": 0.25, "c": 0.125})
	})
}

// A host-set change (SetHosts) reaches the zone shares at the next pick.
func TestZoneAwareFollowsHostSet(t *testing.T) {
	env := zoneEnv("a:4,b:4,c:2", "a", map[string]float64{"a": 40, "b": 40, "c": 20})
	b := newChecked(t, "random+zone-aware", env, "")
	if err := b.SetHosts([]int{9, 8, 7, 6, 5, 4, 3, 2}); err != nil { // a loses 0 and 1
		t.Fatal(err)
	}
	checkZoneShares(t, byZone(pickShares(t, b, env.N, zonePicks), env.Zones), map[string]float64{"a": 0.625, "b": 0.25, "c": 0.125})
	if err := b.SetHosts(seq(env.N)); err != nil {
		t.Fatal(err)
	}
	checkZoneShares(t, byZone(pickShares(t, b, env.N, 10_000), env.Zones), map[string]float64{"a": 1})
}

// The same seed gives the same picks.
func TestZoneAwareRepeatable(t *testing.T) {
	run := func() []int {
		env := zoneEnv("a:2,b:4,c:2", "a", map[string]float64{"a": 40, "b": 40, "c": 20})
		b := newChecked(t, "p2c+zone-aware(routing_enabled=80)", env, "")
		var eps []int
		for range 1000 {
			ep, done := b.Pick(Request{})
			eps = append(eps, ep)
			done(ok200)
		}
		return eps
	}
	first, second := run(), run()
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("pick %d: %d, then %d with the same seed", i, first[i], second[i])
		}
	}
}

// BenchmarkZonePick measures a Pick and its done of round-robin and of
// round-robin+zone-aware on 10 endpoints in 3 zones, for a client in a zone
// that spills 20% of its picks. The zone-aware run also reports its cost
// as a ratio to plain round robin (x-round-robin), both timed after its
// loop in alternating blocks of 1000 picks, as many as the loop made, so
// that a change of the machine's load during the run weighs on both alike.
func BenchmarkZonePick(b *testing.B) {
	newLB := func(b *testing.B, spec string) *Balancer {
		lb, err := New(spec, zoneEnv("a:4,b:3,c:3", "a", map[string]float64{"a": 50, "b": 30, "c": 20}))
		if err != nil {
			b.Fatal(err)
		}
		return lb
	}
	block := func(lb *Balancer, n int) time.Duration {
		start := time.Now()
		for range n {
			_, done := lb.Pick(Request{})
			done(ok200)
		}
		return time.Since(start)
	}
	for _, spec := range []string{"round-robin", "round-robin+zone-aware"} {
		b.Run(spec, func(b *testing.B) {
			lb := newLB(b, spec)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				_, done := lb.Pick(Request{})
				done(ok200)
				n++
			}
			if spec == "round-robin" {
				return
			}
			plain := newLB(b, "round-robin")
			var zoned, rr time.Duration
			for left := n; left > 0; left -= 1000 {
				k := min(left, 1000)
				rr += block(plain, k)
				zoned += block(lb, k)
			}
			b.ReportMetric(float64(zoned)/float64(rr), "x-round-robin")
		})
	}
}

func ExampleNew_zoneAware() {
	b, err := New("random+zone-aware", Env{
		N:           8,
		Rand:        newRand(1),
		Zones:       []string{"a", "a", "b", "b", "b", "b", "c", "c"},
		LocalZone:   "a",
		ZoneClients: map[string]float64{"a": 40, "b": 40, "c": 20},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	perZone := map[string]int{}
	for range 10_000 {
		ep, done := b.Pick(Request{})
		perZone[[]string{"a", "a", "b", "b", "b", "b", "c", "c"}[ep]]++
		done(Outcome{Status: 200})
	}
	fmt.Printf("a %.1f%%, b %.1f%%, c %.1f%%\n", float64(perZone["a"])/100, float64(perZone["b"])/100, float64(perZone["c"])/100)
	// Output: a 62.9%, b 24.6%, c 12.5%
}

package strategies

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// zonesOf expands "a:4,b:2" into the zone of each endpoint, in order:
// a a a a b b.
func zonesOf(layout string) []string {
	var out []string
	for _, part := range strings.Split(layout, ",") {
		name, count, _ := strings.Cut(part, ":")
		n, err := strconv.Atoi(count)
		if err != nil {
			panic(err)
		}
		for range n {
			out = append(out, name)
		}
	}
	return out
}

// zoneEnv is an Env of the endpoints of layout (see zonesOf) for a client
// in local, with the clients' shares (nil: as the endpoints).
func zoneEnv(layout, local string, clients map[string]float64) Env {
	zones := zonesOf(layout)
	return Env{N: len(zones), Rand: newRand(7), Clock: newFakeClock(), Zones: zones, LocalZone: local, ZoneClients: clients}
}

// pickShares makes picks picks on b, each answered 200 at once, and
// returns each endpoint's share of them.
func pickShares(t *testing.T, b *Balancer, n, picks int) []float64 {
	t.Helper()
	counts := make([]int, n)
	for range picks {
		ep, done := b.Pick(Request{})
		if ep == NoHost {
			t.Fatal("Pick returned NoHost")
		}
		counts[ep]++
		done(ok200)
	}
	shares := make([]float64, n)
	for i, c := range counts {
		shares[i] = float64(c) / float64(picks)
	}
	return shares
}

// byZone sums endpoint shares by zone.
func byZone(shares []float64, zones []string) map[string]float64 {
	out := map[string]float64{}
	for ep, s := range shares {
		out[zones[ep]] += s
	}
	return out
}

// zoneTolerance is how far a share of 100,000 picks may be from its
// expected value: over four standard deviations of the worst case (a
// share of 0.5).
const (
	zonePicks     = 100_000
	zoneTolerance = 0.007
)

// checkZoneShares asserts that the zones' shares are want, within
// zoneTolerance; a zone not in want must get none.
func checkZoneShares(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for zone, g := range got {
		if w := want[zone]; math.Abs(g-w) > zoneTolerance {
			t.Errorf("zone %s: share %.4f, want %.4f (all: %v)", zone, g, w, fmtShares(got))
		}
	}
	for zone, w := range want {
		if _, ok := got[zone]; !ok && w > zoneTolerance {
			t.Errorf("zone %s: no picks, want a share of %.4f", zone, w)
		}
	}
}

func fmtShares(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%.4f", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// markDown marks endpoints down through the healthcheck wrapper of b,
// which must have fall=1.
func markDown(b *Balancer, eps ...int) {
	for _, ep := range eps {
		b.ReportProbe(ep, false)
	}
}

// span returns the ids from..to-1.
func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// ejectByPicks ejects targets through the eject wrapper of b (which must
// have consecutive=1 and a max that allows them) by failing the picks
// that land on them, as a run would.
func ejectByPicks(t *testing.T, b *Balancer, targets ...int) {
	t.Helper()
	for range 1_000_000 {
		ejected := b.Ejected()
		missing := false
		for _, ep := range targets {
			if !slices.Contains(ejected, ep) {
				missing = true
			}
		}
		if !missing {
			return
		}
		ep, done := b.Pick(Request{})
		if slices.Contains(targets, ep) && !slices.Contains(ejected, ep) {
			done(fail503)
		} else {
			done(ok200)
		}
	}
	t.Fatalf("could not eject %v; ejected: %v", targets, b.Ejected())
}

func TestZoneEnvErrors(t *testing.T) {
	base := func() Env { return zoneEnv("a:2,b:2", "a", nil) }
	tests := []struct {
		name   string
		change func(*Env)
		want   string
	}{
		{"zones of another length", func(e *Env) { e.Zones = e.Zones[:3] },
			"strategies: Env.Zones has 3 zones for 4 endpoints"},
		{"empty zone name", func(e *Env) { e.Zones[2] = "" },
			"strategies: Env.Zones: endpoint 2 has an empty zone name"},
		{"no local zone", func(e *Env) { e.LocalZone = "" },
			"strategies: Env.LocalZone is empty; with Env.Zones the client's own zone is required"},
		{"unknown local zone", func(e *Env) { e.LocalZone = "z" },
			`strategies: Env.LocalZone "z" is none of the zones ("a", "b")`},
		{"local zone without zones", func(e *Env) { e.Zones = nil },
			"strategies: Env.LocalZone and Env.ZoneClients need Env.Zones, the zone of each endpoint; it is nil"},
		{"clients without zones", func(e *Env) { e.Zones, e.LocalZone, e.ZoneClients = nil, "", map[string]float64{"a": 1} },
			"strategies: Env.LocalZone and Env.ZoneClients need Env.Zones, the zone of each endpoint; it is nil"},
		{"negative share", func(e *Env) { e.ZoneClients = map[string]float64{"a": 1, "b": -1} },
			`strategies: Env.ZoneClients: zone "b" has a clients share of -1; want a finite number >= 0`},
		{"NaN share", func(e *Env) { e.ZoneClients = map[string]float64{"a": math.NaN()} },
			`strategies: Env.ZoneClients: zone "a" has a clients share of NaN; want a finite number >= 0`},
		{"infinite share", func(e *Env) { e.ZoneClients = map[string]float64{"a": math.Inf(1)} },
			`strategies: Env.ZoneClients: zone "a" has a clients share of +Inf; want a finite number >= 0`},
		{"empty client zone", func(e *Env) { e.ZoneClients = map[string]float64{"a": 1, "": 1} },
			"strategies: Env.ZoneClients names a zone with an empty name"},
		{"shares sum to zero", func(e *Env) { e.ZoneClients = map[string]float64{"a": 0, "b": 0} },
			"strategies: Env.ZoneClients: the clients shares sum to 0; want a finite sum > 0"},
		{"local zone without clients", func(e *Env) { e.ZoneClients = map[string]float64{"a": 0, "b": 1} },
			`strategies: Env.ZoneClients gives the local zone "a" no clients`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := base()
			tt.change(&env)
			newChecked(t, "random+zone-aware", env, tt.want)
		})
	}
	t.Run("a zone with clients and no endpoint", func(t *testing.T) {
		env := base()
		env.LocalZone, env.ZoneClients = "c", map[string]float64{"a": 1, "b": 1, "c": 1}
		newChecked(t, "random+zone-aware", env, "")
	})
	t.Run("zones are ignored by other strategies", func(t *testing.T) {
		newChecked(t, "p2c+eject", base(), "")
	})
}

func TestZoneWrappersNeedZones(t *testing.T) {
	for _, w := range []string{"zone-aware", "priority-failover", "prefer-close"} {
		t.Run(w, func(t *testing.T) {
			want := w + ": needs the zone of every endpoint and of the client (Env.Zones, Env.LocalZone), none were given; an experiment must give zones: (each zone's name, instances and share of clients)"
			newChecked(t, "p2c+eject+"+w, Env{N: 4, Rand: newRand(1)}, want)
			if !zoneWrappers[w] {
				t.Errorf("%s is not registered as a zone wrapper", w)
			}
		})
	}
}

func TestZoneSpecs(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"p2c+eject+zone-aware", ""},
		{"p2c+eject+zone-aware(min_cluster_size=0,routing_enabled=0)", ""},
		{"p2c+zone-aware(min_cluster_size=100,routing_enabled=12.5)", ""},
		{"round-robin+healthcheck+priority-failover(overprovisioning=1)", ""},
		{"random+prefer-close", ""},
		{"p2c+prefer-close()", ""},
		{"p2c+zone-aware(min_cluster_size=-1)", `zone-aware: min_cluster_size: want an integer >= 0, got "-1"`},
		{"p2c+zone-aware(min_cluster_size=2.5)", `zone-aware: min_cluster_size: want an integer >= 0, got "2.5"`},
		{"p2c+zone-aware(routing_enabled=101)", `zone-aware: routing_enabled: want a number in [0, 100], got "101"`},
		{"p2c+zone-aware(routing_enabled=-1)", `zone-aware: routing_enabled: want a number in [0, 100], got "-1"`},
		{"p2c+zone-aware(routing_enabled=50%)", `zone-aware: routing_enabled: want a number in [0, 100], got "50%"`},
		{"p2c+zone-aware(routing_enabled=NaN)", `zone-aware: routing_enabled: want a number in [0, 100], got "NaN"`},
		{"p2c+zone-aware(min_size=3)", `zone-aware: unknown parameter "min_size" (allowed: min_cluster_size, routing_enabled)`},
		{"p2c+priority-failover(overprovisioning=0)", `priority-failover: overprovisioning: want a number in [0.01, 100], got "0"`},
		{"p2c+priority-failover(overprovisioning=x)", `priority-failover: overprovisioning: want a number in [0.01, 100], got "x"`},
		{"p2c+priority-failover(overprovisioning=101)", `priority-failover: overprovisioning: want a number in [0.01, 100], got "101"`},
		{"p2c+prefer-close(zone=a)", `prefer-close: unknown parameter "zone" (prefer-close takes no parameters)`},
		{"p2c+zone-aware+zone-aware", `wrapper "zone-aware" given twice`},
	} {
		t.Run(tt.spec, func(t *testing.T) { checkParse(t, tt.spec, tt.want) })
	}
}

// contractPicker checks what a zone wrapper gives its inner Picker: hosts
// ascending, announced through UpdateHosts before the first Pick and
// before every Pick whose hosts differ from the previous one's, and at no
// other time.
type contractPicker struct {
	t       *testing.T
	fed     []int // the hosts of the latest UpdateHosts
	updated bool  // UpdateHosts was called since the latest Pick
	last    []int // the hosts of the latest Pick; nil before the first
	picks   int
}

func (c *contractPicker) UpdateHosts(hosts []int) {
	if c.last != nil && slices.Equal(hosts, c.last) {
		c.t.Errorf("UpdateHosts(%v) announces the hosts of the previous Pick", hosts)
	}
	c.fed, c.updated = slices.Clone(hosts), true
}

func (c *contractPicker) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	c.picks++
	if !slices.IsSorted(hosts) || len(hosts) == 0 {
		c.t.Fatalf("Pick hosts %v: want non-empty and ascending", hosts)
	}
	if !slices.Equal(hosts, c.fed) {
		c.t.Fatalf("Pick hosts %v were not announced (latest UpdateHosts: %v)", hosts, c.fed)
	}
	if c.last != nil && !slices.Equal(hosts, c.last) && !c.updated {
		c.t.Fatalf("Pick hosts %v differ from the previous %v without UpdateHosts", hosts, c.last)
	}
	c.last, c.updated = slices.Clone(hosts), false
	return hosts[c.picks%len(hosts)], noDone
}

// TestZoneWrappersFeedTheirInner drives each zone wrapper over a healthy
// fleet, host-set changes and health changes of a healthcheck inside it,
// and checks the HostsUpdater contract towards the inner Picker.
func TestZoneWrappersFeedTheirInner(t *testing.T) {
	builds := map[string]func(Picker, *buildEnv) Picker{
		"zone-aware": func(in Picker, env *buildEnv) Picker { return newZoneAware(in, env, 6, 0.7) },
		"priority-failover": func(in Picker, env *buildEnv) Picker {
			return newPriorityFailover(in, env, 140)
		},
		"prefer-close": func(in Picker, env *buildEnv) Picker { return newPreferClose(in, env) },
	}
	for _, name := range slices.Sorted(maps.Keys(builds)) {
		t.Run(name, func(t *testing.T) {
			env := zoneEnv("a:4,b:4,c:4", "a", map[string]float64{"a": 50, "b": 30, "c": 20})
			zones, err := newZoneMap(env)
			if err != nil {
				t.Fatal(err)
			}
			// The healthcheck is a health source of the wrapper, which
			// passes its hosts straight to the checking Picker.
			inner := &contractPicker{t: t}
			hc := newHealthcheck(&contractPicker{t: t}, env.N, ProbeConfig{Interval: 1, Timeout: 1, Path: "/"}, 1, 1, nil)
			be := &buildEnv{n: env.N, clock: env.Clock, rand: env.Rand, zones: zones, inside: []Picker{hc}}
			w := builds[name](inner, be)
			hosts := seq(env.N)
			for step := range 2000 {
				switch step % 250 {
				case 50:
					hosts = []int{0, 1, 4, 5, 6, 8, 9, 10, 11}
				case 100:
					hc.ProbeResult(0, false, epoch0)
					hc.ProbeResult(4, false, epoch0)
				case 150:
					hc.ProbeResult(1, false, epoch0)
					hc.ProbeResult(2, false, epoch0)
					hc.ProbeResult(3, false, epoch0)
				case 200:
					for ep := range env.N {
						hc.ProbeResult(ep, true, epoch0)
					}
					hosts = seq(env.N)
				}
				ep, done := feedPick(w, Request{}, hosts)
				if !slices.Contains(hosts, ep) {
					t.Fatalf("step %d: picked %d, not one of %v", step, ep, hosts)
				}
				if hc.down[ep] && hc.nDown*2 <= len(hosts) {
					t.Fatalf("step %d: picked %d, which is down, with most hosts up", step, ep)
				}
				done(ok200)
			}
		})
	}
}

package experiments

import (
	"slices"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/faultyserver"
)

const zonesHead = `rate: 50
duration: 10s
instances: {service: {dist: fixed, value: 1ms}}
`

func TestZones(t *testing.T) {
	e, err := Parse("t.yaml", []byte(zonesHead+`zones:
  - {name: a, instances: 2, clients: 50%}
  - {name: b, instances: 3, clients: 25%}
  - {name: c, instances: 0, clients: 0.25}
cross_zone_latency: 2ms
faults:
  - {zone: b, at: 1s, until: 4s, fault: {mode: fail, status: 503}}
  - {partition: [a, c], at: 2s, until: 3s}
  - {partition: [a, b], at: 4s, until: 5s, fault: {mode: syn-drop}}
strategies: [round-robin, p2c+eject+zone-aware]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Zone{{Name: "a", First: 0, Count: 2, Clients: 0.5}, {Name: "b", First: 2, Count: 3, Clients: 0.25}, {Name: "c", First: 5, Count: 0, Clients: 0.25}}
	if !slices.Equal(e.Zones, want) || e.Instances.Count != 5 || e.CrossZoneLatency.String() != "2ms" {
		t.Fatalf("zones %+v, %d instances, cross-zone %v", e.Zones, e.Instances.Count, e.CrossZoneLatency)
	}
	// 50/25/25 needs 4 replicas: a a b c.
	if e.Replicas != 4 {
		t.Errorf("replicas %d, want 4", e.Replicas)
	}
	var rz []int
	for r := range 8 {
		rz = append(rz, e.ReplicaZone(r))
	}
	if !slices.Equal(rz, []int{0, 0, 1, 2, 0, 0, 1, 2}) {
		t.Errorf("replica zones %v", rz)
	}
	if got := e.InstanceZones(5); !slices.Equal(got, []string{"a", "a", "b", "b", "b"}) {
		t.Errorf("instance zones %v", got)
	}
	type fl struct {
		id   int
		from string
		mode string
	}
	var got []fl
	for _, f := range e.Faults {
		got = append(got, fl{f.Instance, strings.Join(f.From, ","), f.Spec.Mode()})
	}
	wantF := []fl{{2, "", "fail"}, {3, "", "fail"}, {4, "", "fail"},
		// a partition from c, which has no instances: a's instances drop c's clients' packets.
		{0, "c", "loss"}, {1, "c", "loss"},
		{0, "b", "syn-drop"}, {1, "b", "syn-drop"}, {2, "a", "syn-drop"}, {3, "a", "syn-drop"}, {4, "a", "syn-drop"}}
	if !slices.Equal(got, wantF) {
		t.Errorf("faults %v, want %v", got, wantF)
	}
	if l, ok := e.Faults[3].Spec.(faultyserver.Loss); !ok || l.P != 1 {
		t.Errorf("a partition's default fault is %#v, want loss p 1", e.Faults[3].Spec)
	}
	// A partition's instances are not faulty for their own zone's clients.
	if got := e.FaultyInstances(); !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("faulty instances %v", got)
	}
}

func TestZonesDefaults(t *testing.T) {
	e, err := Parse("t.yaml", []byte(zonesHead+`zones:
  - {name: a, instances: 3}
  - {name: b, instances: 1}
strategies: [round-robin+prefer-close]
`))
	if err != nil {
		t.Fatal(err)
	}
	// Without clients: as the instances spread, 75/25, so 4 replicas.
	if e.Zones[0].Clients != 0.75 || e.Zones[1].Clients != 0.25 || e.Replicas != 4 || e.CrossZoneLatency != 0 {
		t.Errorf("zones %+v, replicas %d", e.Zones, e.Replicas)
	}
}

func TestBadZones(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"bad name", `zones: [{name: "A b", instances: 1}]
strategies: [round-robin]`, `zones[0].name: "A b": want lower-case letters`},
		{"twice", `zones: [{name: a, instances: 1}, {name: a, instances: 1}]
strategies: [round-robin]`, `zones[1].name: zone "a" is listed twice`},
		{"no instances", `zones: [{name: a}]
strategies: [round-robin]`, `zones[0].instances: is required`},
		{"negative instances", `zones: [{name: a, instances: -1}]
strategies: [round-robin]`, `zones[0].instances: must be >= 0, got -1`},
		{"bad share", `zones: [{name: a, instances: 1, clients: lots}]
strategies: [round-robin]`, `"lots" is not a share`},
		{"share over 100", `zones: [{name: a, instances: 1, clients: 150%}, {name: b, instances: 1, clients: -50%}]
strategies: [round-robin]`, `zones[0].clients: must be within [0%, 100%], got 150%`},
		{"shares do not add up", `zones: [{name: a, instances: 1, clients: 50%}, {name: b, instances: 1, clients: 40%}]
strategies: [round-robin]`, `zones: clients shares add up to 90% (a 50%, b 40%); want 100%`},
		{"some shares", `zones: [{name: a, instances: 1, clients: 50%}, {name: b, instances: 1}]
strategies: [round-robin]`, `zones: give every zone's clients share or none`},
		{"count differs", `instances: {count: 3, service: {dist: fixed, value: 1ms}}
zones: [{name: a, instances: 1}, {name: b, instances: 1}]
strategies: [round-robin]`, `zones: hold 2 instances but the run has 3`},
		{"replicas", `replicas: 3
zones: [{name: a, instances: 1}, {name: b, instances: 1}]
strategies: [round-robin]`, `replicas: 3 cannot split the clients by zone (a 50%, b 50%); give a count that does, e.g. 2`},
		{"cross-zone without zones", `cross_zone_latency: 1ms
strategies: [round-robin]`, `cross_zone_latency: needs zones:`},
		{"cross-zone negative", `zones: [{name: a, instances: 1}]
cross_zone_latency: -1ms
strategies: [round-robin]`, `cross_zone_latency: must be within [0, timeout`},
		{"zone wrapper without zones", `instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [round-robin+zone-aware]`, `strategies[0]: "round-robin+zone-aware" routes by zone and needs zones:`},
		{"proxy", `zones: [{name: a, instances: 1}]
strategies: ["nginx:round-robin"]`, `strategies[0]: "nginx:round-robin": with zones every strategy is lbchaos's own client-side balancer`},
		{"h2c", `protocol: h2c
zones: [{name: a, instances: 1}]
strategies: [round-robin]`, `zones: send over HTTP/1.1; protocol h2c is not supported with zones`},
		{"generators", `generators: 2
zones: [{name: a, instances: 1}]
strategies: [round-robin]`, `zones: run with one load generator`},
		{"unknown zone", `zones: [{name: a, instances: 1}]
faults: [{zone: b, fault: {mode: hang}}]
strategies: [round-robin]`, `faults[0].zone: unknown zone "b" (zones: a)`},
		{"empty zone", `zones: [{name: a, instances: 1}, {name: b, instances: 0}]
faults: [{zone: b, fault: {mode: hang}}]
strategies: [round-robin]`, `faults[0].zone: zone "b" has no instances`},
		{"zone without zones", `instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{zone: b, fault: {mode: hang}}]
strategies: [round-robin]`, `faults[0]: names a zone but the experiment has no zones:`},
		{"zone and instance", `zones: [{name: a, instances: 1}]
faults: [{zone: a, instance: 0, fault: {mode: hang}}]
strategies: [round-robin]`, `faults[0]: give one of instance (or instances), tier, zone and partition`},
		{"partition of one", `zones: [{name: a, instances: 1}]
faults: [{partition: [a]}]
strategies: [round-robin]`, `faults[0].partition: wants two zones, e.g. partition: [a, b]; got [a]`},
		{"partition with itself", `zones: [{name: a, instances: 1}]
faults: [{partition: [a, a]}]
strategies: [round-robin]`, `faults[0].partition: wants two zones`},
		{"partition unknown", `zones: [{name: a, instances: 1}]
faults: [{partition: [a, x]}]
strategies: [round-robin]`, `faults[0].partition[1]: unknown zone "x"`},
		{"partition not network", `zones: [{name: a, instances: 1}, {name: b, instances: 1}]
faults: [{partition: [a, b], fault: {mode: hang}}]
strategies: [round-robin]`, `must be a network fault (loss or syn-drop), got "hang"`},
		{"no fault", `zones: [{name: a, instances: 1}]
faults: [{zone: a}]
strategies: [round-robin]`, `faults[0].fault: is required`},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := zonesHead
			if strings.HasPrefix(c.body, "instances:") {
				head = strings.Replace(zonesHead, "instances: {service: {dist: fixed, value: 1ms}}\n", "", 1)
			}
			_, err := Parse("t.yaml", []byte(head+c.body+"\n"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestZonesReplicaSearch(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"no count splits", `zones: [{name: a, instances: 1, clients: 33.3%}, {name: b, instances: 1, clients: 33.3%}, {name: c, instances: 1, clients: 33.4%}]
strategies: [round-robin]`, `zones: the clients' shares (a 33.3%, b 33.3%, c 33.4%) split exactly over no number of client replicas up to 64`},
		{"given count that none fixes", `replicas: 3
zones: [{name: a, instances: 1, clients: 33.3%}, {name: b, instances: 1, clients: 66.7%}]
strategies: [round-robin]`, `round the shares to ones some count up to 64 splits`},
		{"hop without zones", `tiers: [{name: x, instances: 1, downstream: y}, {name: y, instances: 1}]
strategies: ["p2c+zone-aware > random"]`, `strategies[0] (hop 0): "p2c+zone-aware" routes by zone`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(zonesHead+c.body+"\n"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
	// Thirds split over 3.
	e, err := Parse("t.yaml", []byte(zonesHead+"zones: [{name: a, instances: 1}, {name: b, instances: 1}, {name: c, instances: 1}]\nstrategies: [round-robin]\n"))
	if err != nil || e.Replicas != 3 {
		t.Fatalf("thirds: %v, replicas %v", err, e)
	}
}

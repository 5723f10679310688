package experiments

import (
	"slices"
	"strings"
	"testing"
)

const tiersHead = `rate: 50
duration: 10s
instances: {service: {dist: fixed, value: 1ms}}
`

func TestTiers(t *testing.T) {
	e, err := Parse("t.yaml", []byte(tiersHead+`tiers:
  - {name: a, instances: 2, downstream: b, calls: 2}
  - {name: b, instances: 3, downstream: c, service: {dist: fixed, value: 5ms}}
  - {name: c, instances: 1}
faults:
  - {tier: b, at: 1s, fault: {mode: fail, status: 503}}
strategies: [round-robin, "round-robin+retry(attempts=3) > random > least-inflight"]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Tier{{Name: "a", First: 0, Count: 2, Calls: 2}, {Name: "b", First: 2, Count: 3, Calls: 1}, {Name: "c", First: 5, Count: 1}}
	if !slices.Equal(e.Tiers, want) || e.Instances.Count != 6 || e.EdgeCount() != 2 {
		t.Fatalf("tiers %+v, %d instances, edge %d", e.Tiers, e.Instances.Count, e.EdgeCount())
	}
	if got := e.Instances.Instance(3).Service.Value; got.String() != "5ms" {
		t.Errorf("tier b's service %v", got)
	}
	var faulty []int
	for _, f := range e.Faults {
		faulty = append(faulty, f.Instance)
	}
	if !slices.Equal(faulty, []int{2, 3, 4}) || e.TierOf(4) != 1 || e.TierOf(5) != 2 {
		t.Errorf("fault on tier b: instances %v", faulty)
	}
	if got := HopStrategies(e.Strategies[1], 3); !slices.Equal(got, []string{"round-robin+retry(attempts=3)", "random", "least-inflight"}) {
		t.Errorf("hops %q", got)
	}
	if got := HopStrategies("round-robin", 3); !slices.Equal(got, []string{"round-robin", "round-robin", "round-robin"}) {
		t.Errorf("one hop for all %q", got)
	}
	if got := EdgeStrategy(e.Strategies[1]); got != "round-robin+retry(attempts=3)" {
		t.Errorf("edge %q", got)
	}
}

func TestBadTiers(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"cycle", `tiers:
  - {name: a, instances: 1, downstream: b}
  - {name: b, instances: 1, downstream: a}
strategies: [round-robin]`, `tiers[1].downstream: "b" calls "a", which forms a cycle (a → b → a)`},
		{"self", `tiers:
  - {name: a, instances: 1, downstream: a}
strategies: [round-robin]`, `tiers[0].downstream: "a" calls "a", which forms a cycle (a → a)`},
		{"unknown", `tiers:
  - {name: a, instances: 1, downstream: x}
  - {name: b, instances: 1}
strategies: [round-robin]`, `tiers[0].downstream: unknown tier "x" (tiers: a, b)`},
		{"out of order", `tiers:
  - {name: a, instances: 1, downstream: c}
  - {name: b, instances: 1, downstream: c}
  - {name: c, instances: 1}
strategies: [round-robin]`, `tiers[0].downstream: "a" calls "c" but the next tier listed is "b"`},
		{"unreached", `tiers:
  - {name: a, instances: 1}
  - {name: b, instances: 1}
strategies: [round-robin]`, `tiers[0].downstream: is required: tier "b" is listed after it`},
		{"hops", `tiers:
  - {name: a, instances: 1, downstream: b}
  - {name: b, instances: 1}
strategies: ["round-robin > random > random"]`, `strategies[0]: "round-robin > random > random" has 3 hops separated by ">" but the experiment has 2 tiers`},
		{"bad hop", `tiers:
  - {name: a, instances: 1, downstream: b}
  - {name: b, instances: 1}
strategies: ["round-robin > round-robin+retry(attempts=0)"]`, `strategies[0] (hop 1): retry: attempts`},
		{"proxy hop", `tiers:
  - {name: a, instances: 1, downstream: b}
  - {name: b, instances: 1}
strategies: ["nginx:round_robin"]`, `strategies[0]: hop 0 (nginx:round_robin): tiers run lbchaos's built-in strategies`},
		{"count", `tiers:
  - {name: a, instances: 1}
strategies: [round-robin]
`, ``},
		{"unknown fault tier", `tiers:
  - {name: a, instances: 1}
faults: [{tier: z, at: 1s, fault: {mode: fail}}]
strategies: [round-robin]`, `faults[0].tier: unknown tier "z" (tiers: a)`},
		{"grpc", `protocol: grpc
tiers:
  - {name: a, instances: 1}
strategies: [round-robin]`, `tiers: call each other over HTTP/1.1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tiersHead+c.body+"\n"))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("accepted, want %q", c.want)
			case !strings.Contains(err.Error(), c.want):
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, c.want)
			}
		})
	}
}

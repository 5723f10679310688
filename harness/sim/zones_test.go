package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// zoneFleet is zones a and b of the given instances and clients shares
// (YAML), 5 ms of fixed service on 8 workers, 400 requests a second at
// constant intervals for 5 s, with the cross-zone latency, timeout and
// faults (YAML list items, or "") given.
func zoneFleet(t *testing.T, zones string, cross, timeout time.Duration, faults, strategy string) *experiments.Experiment {
	t.Helper()
	f := ""
	if faults != "" {
		f = "faults:\n" + faults
	}
	return runtest.MustExperiment(t, "zones", fmt.Sprintf(`
duration: 5s
arrival: constant
rate: 400
timeout: %v
instances: {workers: 8, service: {dist: fixed, value: 5ms}}
zones: %s
cross_zone_latency: %v
%sstrategies: [%q]
`, timeout, zones, cross, f, strategy))
}

const halfAndHalf = "[{name: a, instances: 2, clients: 50%}, {name: b, instances: 2, clients: 50%}]"

// checkClientZones checks that request k's outcome carries the zone of
// its replica, k mod Replicas: rs must be every request in arrival order.
func checkClientZones(t *testing.T, exp *experiments.Experiment, rs []simResult) {
	t.Helper()
	for k, r := range rs {
		if want := int32(exp.ReplicaZone(k % exp.Replicas)); r.ClientZone != want {
			t.Fatalf("request %d: client zone %d, want %d (replica %d of %d)", k, r.ClientZone, want, k%exp.Replicas, exp.Replicas)
		}
	}
}

func TestSimCrossZoneLatency(t *testing.T) {
	// Two replicas, one a client of each zone, each going round the four
	// instances: half the requests cross zones and take 5 + 20 ms, the
	// rest 5 ms, with or without a policy, and calibrated (its overhead
	// added).
	for _, e := range latencyEngines {
		t.Run(e.name, func(t *testing.T) {
			exp := zoneFleet(t, halfAndHalf, 20*time.Millisecond, time.Second, "", e.strategy)
			if exp.Replicas != 2 {
				t.Fatalf("%d replicas, want 2", exp.Replicas)
			}
			st, rs := traceCalibrated(t, exp, e.strategy, e.cal)
			checkClientZones(t, exp, rs)
			cross := 0
			for k, r := range rs {
				want := 5*time.Millisecond + e.over
				if int(r.ClientZone) != exp.ZoneOf(r.Instance) {
					want += 20 * time.Millisecond
					cross++
				}
				if !r.Success || r.Latency != want || r.so.Latency != want {
					t.Fatalf("request %d from zone %d to instance %d: latency %v (strategy saw %v), success %v; want %v",
						k, r.ClientZone, r.Instance, r.Latency, r.so.Latency, r.Success, want)
				}
			}
			if share := float64(cross) / float64(len(rs)); math.Abs(share-0.5) > 0.01 {
				t.Errorf("%.3f of the requests crossed zones, want 0.5", share)
			}
			over := float64(e.over) / 1e6
			if got, want := st.LatencyMs.Mean, 15+over; math.Abs(got-want) > 0.2 {
				t.Errorf("mean latency %.2f ms, want %.2f", got, want)
			}
			if got, want := st.LatencyMs.P90, 25+over; math.Abs(got-want) > 0.2 {
				t.Errorf("p90 %.2f ms, want %.2f", got, want)
			}
			if st.ErrorRatio != 0 {
				t.Errorf("error ratio %v, want 0", st.ErrorRatio)
			}
		})
	}
}

func TestSimCrossZoneLatencyAddsToAPlansLatency(t *testing.T) {
	// Instance 3, of zone b, adds 50 ms to every request: zone a's clients
	// wait 70 ms on the way in, zone b's 50.
	exp := zoneFleet(t, halfAndHalf, 20*time.Millisecond, time.Second,
		"  - {instance: 3, at: 0s, fault: {mode: latency, per: request, value: 50ms}}\n", "round-robin")
	_, rs := traceSim(t, exp, "round-robin")
	for k, r := range rs {
		want := 5 * time.Millisecond
		if int(r.ClientZone) != exp.ZoneOf(r.Instance) {
			want += 20 * time.Millisecond
		}
		if r.Instance == 3 {
			want += 50 * time.Millisecond
		}
		if r.Latency != want {
			t.Fatalf("request %d from zone %d to instance %d: latency %v, want %v", k, r.ClientZone, r.Instance, r.Latency, want)
		}
	}
}

func TestSimPartition(t *testing.T) {
	// A partition between a and b from the start: every request from a
	// client of one zone to an instance of the other hangs until its 1 s
	// timeout, the others succeed. Round robin sends half the requests
	// across; prefer-close keeps every request in its client's zone.
	const partition = "  - {partition: [a, b], at: 0s}\n"
	tests := []struct {
		strategy string
		timeouts float64
	}{
		{"round-robin", 0.5},
		{"round-robin+prefer-close", 0},
		{"round-robin+retry(attempts=2)", 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.strategy, func(t *testing.T) {
			exp := zoneFleet(t, halfAndHalf, 0, time.Second, partition, tc.strategy)
			if got := len(exp.Faults); got != 4 {
				t.Fatalf("%d faults, want one per instance", got)
			}
			st, rs := traceSim(t, exp, tc.strategy)
			checkClientZones(t, exp, rs)
			for k, r := range rs {
				across := int(r.ClientZone) != exp.ZoneOf(r.Instance)
				switch {
				case across && (!r.Timeout || r.Latency != time.Second):
					t.Fatalf("request %d from zone %d to instance %d across the partition: timeout %v, latency %v; want a timeout at 1s",
						k, r.ClientZone, r.Instance, r.Timeout, r.Latency)
				case !across && (!r.Success || r.Latency != 5*time.Millisecond):
					t.Fatalf("request %d from zone %d to instance %d: success %v, latency %v; want success in 5ms",
						k, r.ClientZone, r.Instance, r.Success, r.Latency)
				}
			}
			if math.Abs(st.TimeoutRatio-tc.timeouts) > 0.01 {
				t.Errorf("timeout ratio %.3f, want %v", st.TimeoutRatio, tc.timeouts)
			}
		})
	}
}

func TestSimPartitionLossDrawsOnlyForItsZones(t *testing.T) {
	// A lossy partition (p 0.5): zone b's clients never see zone a's
	// instances lose anything, and zone a's clients see zone b's lose
	// about 1-(0.5)^2 = 75% of their requests, each late by at least one
	// retransmission timeout.
	exp := zoneFleet(t, halfAndHalf, 0, 30*time.Second, "  - {partition: [a, b], at: 0s, fault: {mode: loss, p: 0.5}}\n", "round-robin")
	_, rs := traceSim(t, exp, "round-robin")
	late, across := 0, 0
	for k, r := range rs {
		if int(r.ClientZone) == exp.ZoneOf(r.Instance) {
			if r.Latency != 5*time.Millisecond {
				t.Fatalf("request %d from zone %d to instance %d: latency %v, want 5ms", k, r.ClientZone, r.Instance, r.Latency)
			}
			continue
		}
		across++
		if r.Latency > 5*time.Millisecond {
			late++
		}
	}
	if share := float64(late) / float64(across); math.Abs(share-0.75) > 0.04 {
		t.Errorf("%.3f of the requests across zones were late, want 0.75", share)
	}
}

func TestSimZoneFault(t *testing.T) {
	// Zone b (2 of the 4 instances, 25% of the clients) answers 503.
	// Round robin sends every client's requests evenly over the four
	// instances: 50% errors, from every zone. prefer-close keeps each
	// client in its zone: a's clients see none, b's all, 25% in all.
	// zone-aware (min_cluster_size 0: zone logic with four hosts) keeps
	// each zone's load to its share of the hosts: zone a has 50% of the
	// hosts for 75% of the clients, so a's clients stay local with
	// probability 0.5/0.75 and spill to b (the only zone with residual
	// capacity) the remaining third; b's clients stay local. Errors: a's
	// clients 1/3, b's 1, in all 0.75/3 + 0.25 = 50%.
	const zones = "[{name: a, instances: 2, clients: 75%}, {name: b, instances: 2, clients: 25%}]"
	const fault = "  - {zone: b, at: 0s, fault: {mode: fail, status: 503}}\n"
	tests := []struct {
		strategy string
		byZone   [2]float64 // the error ratio of a's clients, of b's
		errors   float64
	}{
		{"round-robin", [2]float64{0.5, 0.5}, 0.5},
		{"round-robin+prefer-close", [2]float64{0, 1}, 0.25},
		{"round-robin+zone-aware(min_cluster_size=0)", [2]float64{1.0 / 3, 1}, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.strategy, func(t *testing.T) {
			exp := zoneFleet(t, zones, 0, time.Second, fault, tc.strategy)
			if exp.Replicas != 4 {
				t.Fatalf("%d replicas, want 4 (3 in a, 1 in b)", exp.Replicas)
			}
			st, rs := traceSim(t, exp, tc.strategy)
			checkClientZones(t, exp, rs)
			var sent, failed [2]int
			for _, r := range rs {
				sent[r.ClientZone]++
				if !r.Success {
					failed[r.ClientZone]++
				}
			}
			for z := range sent {
				if got := float64(failed[z]) / float64(sent[z]); math.Abs(got-tc.byZone[z]) > 0.03 {
					t.Errorf("zone %s's clients: error ratio %.3f, want %.3f", exp.Zones[z].Name, got, tc.byZone[z])
				}
			}
			if math.Abs(st.ErrorRatio-tc.errors) > 0.03 {
				t.Errorf("error ratio %.3f, want %.3f", st.ErrorRatio, tc.errors)
			}
		})
	}
}

func TestOutcomeRunsKeepClientZones(t *testing.T) {
	// Requests of two client zones alternating at one instance, alike but
	// for their zone, are each counted in their zone's run, and end as
	// many adds as there are zones.
	exp := zoneFleet(t, halfAndHalf, 0, time.Second, "", "round-robin")
	s, err := newSim(exp, "round-robin", simHooks{}, engine.NewEventLog(Epoch))
	if err != nil {
		t.Fatal(err)
	}
	r := &s.outcomes
	if r.z != 2 {
		t.Fatalf("runs for %d client zones, want 2", r.z)
	}
	for k := range 10 {
		o := zoneOutcome(k % 2)
		r.add(0, s.gens[0].coll, &o)
	}
	for z := range 2 {
		run := r.runs[z*r.n+1]
		if run.count != 5 || run.o.ClientZone != int32(z) {
			t.Errorf("zone %d: a run of %d outcomes of zone %d, want 5 of zone %d", z, run.count, run.o.ClientZone, z)
		}
	}
}

// zoneOutcome is a successful 5 ms outcome at instance 1 of a client
// of zone z.
func zoneOutcome(z int) (o engine.Outcome) {
	o.Instance, o.Latency, o.Success, o.ClientZone = 1, 5*time.Millisecond, true, int32(z)
	return o
}

func TestSimPartitionProbesByZone(t *testing.T) {
	// Under a partition whose health checks fail, each replica's probes
	// see the instances of the other zone down, and those of its own up:
	// from the first round of probes (at 100 ms) on, every request stays
	// in its client's zone. Were every replica to see every instance
	// down, all would be passed and half the requests would time out.
	const partition = "  - {partition: [a, b], at: 0s, fault: {mode: loss, p: 1, health_status: 503}}\n"
	const strategy = "round-robin+healthcheck(interval=100ms,timeout=50ms,fall=1)"
	exp := zoneFleet(t, halfAndHalf, 0, time.Second, partition, strategy)
	st, rs := traceSim(t, exp, strategy)
	for k, r := range rs {
		if r.SentAt >= 100*time.Millisecond && int(r.ClientZone) != exp.ZoneOf(r.Instance) {
			t.Fatalf("request %d at %v from zone %d went to instance %d, across the partition", k, r.SentAt, r.ClientZone, r.Instance)
		}
	}
	if want := 20.0 / 2000; math.Abs(st.TimeoutRatio-want) > 0.002 {
		t.Errorf("timeout ratio %.4f, want %.4f (half the 40 requests before the first probes)", st.TimeoutRatio, want)
	}
}

package live

import (
	"context"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// Zones on process backends: each zone's clients send from their own
// address, a cross-zone request pays the cross-zone latency, and a
// partition between the zones times out only the requests that cross it,
// its rules gone after the run.
func TestRunZonesWithPartition(t *testing.T) {
	self := needFilter(t)
	exp := runtest.MustExperiment(t, "zones", `
seed: 2
duration: 3s
rate: 200
timeout: 400ms
instances: {workers: 0, service: {dist: fixed, value: 2ms}}
zones:
  - {name: a, instances: 2, clients: 50%}
  - {name: b, instances: 2, clients: 50%}
cross_zone_latency: 30ms
faults:
  - {partition: [a, b], at: 1500ms}
strategies: [round-robin, round-robin+prefer-close]
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if left := ownRules(t, self); len(left) > 0 {
		t.Errorf("after the run, iptables -S still has:\n%s", strings.Join(left, "\n"))
	}
	rr := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, rr)
	if rr.CrossZoneShare == nil || *rr.CrossZoneShare < 0.4 || *rr.CrossZoneShare > 0.6 || len(rr.Zones) != 2 {
		t.Fatalf("round robin: cross-zone share %v, zones %+v; want about half across two zones", rr.CrossZoneShare, rr.Zones)
	}
	// Half the run partitioned, half of its requests crossing: about a
	// quarter time out, and nothing else fails.
	if rr.TimeoutRatio < 0.15 || rr.TimeoutRatio > 0.35 || rr.ErrorRatio > rr.TimeoutRatio+0.01 {
		t.Errorf("round robin across a partition: %.1f%% timeouts, %.1f%% errors; want about 25%% timeouts", 100*rr.TimeoutRatio, 100*rr.ErrorRatio)
	}
	// Within a zone, 2 ms; across, 2 ms + 30 ms.
	if rr.LatencyOkMs == nil || rr.LatencyOkMs.P90 < 30 {
		t.Errorf("round robin: p90 of answered requests %v ms; the cross-zone half should take over 30 ms", rr.LatencyOkMs)
	}
	pc := runtest.StrategyByName(t, sum, "round-robin+prefer-close")
	runtest.CheckAccounting(t, pc)
	if pc.ErrorRatio != 0 || pc.CrossZoneShare == nil || *pc.CrossZoneShare != 0 || pc.LatencyMs.P99 >= 30 {
		t.Errorf("prefer-close: %.2f%% errors, cross-zone share %v, p99 %.1f ms; want every request kept in its zone, none failed, none paying 30 ms",
			100*pc.ErrorRatio, pc.CrossZoneShare, pc.LatencyMs.P99)
	}
	for _, z := range pc.Zones {
		if z.LocalShare != 1 || z.Requests == 0 {
			t.Errorf("prefer-close zone %s: local share %v of %d requests", z.Name, z.LocalShare, z.Requests)
		}
	}
}

package sim

import (
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
)

// simZones is an experiment's zones (experiments.Zone) as the simulation
// applies them; nil without zones, when nothing of this runs.
//
// Model. A request's client zone is its balancer replica's
// (Experiment.ReplicaZone): request k's replica is k mod Replicas, kept in
// its slot as simReq.lb, so a request needs no room of its own for it.
// Zones go with one generator and no tiers (the experiment is validated
// so), and every balancer index of a request is then a client replica.
//
//   - Cross-zone latency. A request whose client zone is not its
//     instance's spends CrossZoneLatency on its way in before its
//     instance carries its plan out: the latency is added to its plan's
//     Latency (admit.go), so the request holds no worker, counts in its
//     latency and stays in flight meanwhile; a plan's own Latency (loss,
//     say) adds to it. Each attempt of a retry or hedge policy pays it when
//     its instance is in another zone; calibrated, it comes after the
//     overhead before service.
//   - Faults From zones (a partition). A fault whose From names zones
//     acts on the requests of those zones' clients alone: for any other
//     client's request the instance plans as it does with no fault, and
//     draws nothing for the fault, so a fault without From, which acts
//     on every request, draws as it always did. An active health probe
//     gets, for each replica, the verdict its zone would see.
//   - Outcomes carry their client zone (engine.Outcome.ClientZone), the
//     index of the replica's zone in exp.Zones.
type simZones struct {
	// client is, by balancer (client replica), the index of its zone.
	client []int32
	// inst is, by instance, the index of its zone; -1 for none.
	inst []int32
	// cross is the experiment's CrossZoneLatency.
	cross time.Duration
}

// newZones returns exp's zones for a simulation whose client replicas
// are lbs, or nil when exp has none.
func newZones(exp *experiments.Experiment, lbs, instances int) *simZones {
	if len(exp.Zones) == 0 {
		return nil
	}
	z := &simZones{client: make([]int32, lbs), inst: make([]int32, instances), cross: exp.CrossZoneLatency}
	for r := range z.client {
		z.client[r] = int32(exp.ReplicaZone(r))
	}
	for id := range z.inst {
		z.inst[id] = int32(exp.ZoneOf(id))
	}
	return z
}

// clientOf returns the zone of balancer lb's clients; -1 for one that is
// not a client replica.
func (z *simZones) clientOf(lb int32) int32 {
	if uint(lb) < uint(len(z.client)) {
		return z.client[lb]
	}
	return -1
}

// zoneMask is a set of zones, bit i for zone i (experiments.MaxZones of
// them at most); 0 stands for every client in simInstance.from.
type zoneMask uint32

// has reports whether zone z is in m.
func (m zoneMask) has(z int32) bool { return z >= 0 && z < 32 && m&(1<<z) != 0 }

// fromMasks returns, by fault change of ops, the client zones the fault
// it sets acts on (Fault.From); 0, all of them, for a fault without From
// and for a clear.
func fromMasks(exp *experiments.Experiment, ops []engine.FaultOp) []zoneMask {
	masks := make([]zoneMask, len(ops))
	for k, op := range ops {
		if !op.Set() || op.Index < 0 || op.Index >= len(exp.Faults) {
			continue
		}
		for _, name := range exp.Faults[op.Index].From {
			for i, zn := range exp.Zones {
				if zn.Name == name && i < 32 {
					masks[k] |= 1 << i
				}
			}
		}
	}
	return masks
}

// actsOn reports whether instance in's fault acts on a request from a
// client of zone cz: every fault but one limited to other zones' clients.
func (in *simInstance) actsOn(cz int32) bool { return in.from == 0 || in.from.has(cz) }

// planFor draws instance ep's plan for a request of balancer lb reaching
// it now (plan), with, when lb's clients are in another zone than ep,
// the cross-zone latency added to its way in.
func (s *sim) planFor(ep int, lb int32) faultyserver.Action {
	if s.zones == nil {
		return s.insts[ep].plan(-1)
	}
	return s.planZoned(ep, lb)
}

// planZoned is planFor with zones.
func (s *sim) planZoned(ep int, lb int32) faultyserver.Action {
	z := s.zones
	cz := z.clientOf(lb)
	a := s.insts[ep].plan(cz)
	if cz >= 0 && z.inst[ep] >= 0 && cz != z.inst[ep] {
		a.Latency += z.cross
	}
	return a
}

// clientZone returns the index of the zone of balancer lb's clients, an
// outcome's ClientZone: 0 without zones (the collector then ignores it).
func (s *sim) clientZone(lb int32) int32 {
	if s.zones == nil {
		return 0
	}
	return s.zones.clientOf(lb)
}

// probeInstance reports a round of active probes of instance i to every
// balancer: each sees the instance as its clients' zone does.
func (s *sim) probeInstance(i int) {
	in := &s.insts[i]
	healthy := faultyserver.ProbeHealthy(in.fault)
	for r, lb := range s.lbs {
		if in.from != 0 && s.zones != nil && !in.actsOn(s.zones.clientOf(int32(r))) {
			lb.ReportProbe(i, true) // the fault is not on this zone's path
			continue
		}
		lb.ReportProbe(i, healthy)
	}
}

package engine

import (
	"sort"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
)

// FaultOp is one timed change of an instance's fault: set a fault, or clear
// it. Both engines play the same list.
type FaultOp struct {
	At       time.Duration // from the start of the attack
	Instance int
	Fault    faultyserver.Fault // nil = clear
	Clears   faultyserver.Fault // for a clear: the fault it ends
	Index    int                // position in the experiment's fault list
	// From is the fault's experiments.Fault.From: the client zones whose
	// traffic it acts on (nil: all).
	From []string
}

// Set reports whether op sets a fault (rather than clearing one).
func (op FaultOp) Set() bool { return op.Fault != nil }

// Subject is the fault op sets or clears.
func (op FaultOp) Subject() faultyserver.Fault {
	if op.Fault != nil {
		return op.Fault
	}
	return op.Clears
}

// FaultOps lists the changes faults make within an attack of duration, in
// time order. A fault with an until at or past the end is never cleared.
func FaultOps(faults []experiments.Fault, duration time.Duration) []FaultOp {
	var ops []FaultOp
	for i, f := range faults {
		ops = append(ops, FaultOp{At: f.At, Instance: f.Instance, Fault: f.Spec, Index: i, From: f.From})
		if f.Until != 0 && f.Until < duration {
			ops = append(ops, FaultOp{At: f.Until, Instance: f.Instance, Clears: f.Spec, Index: i, From: f.From})
		}
	}
	// Clears before sets at the same instant, so back-to-back windows on one
	// instance hand over cleanly.
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].At != ops[j].At {
			return ops[i].At < ops[j].At
		}
		return ops[i].Fault == nil && ops[j].Fault != nil
	})
	return ops
}

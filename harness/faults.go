package harness

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
)

// faultOp is one timed control call: set a fault on an instance, or clear it.
type faultOp struct {
	at       time.Duration
	instance int
	fault    faultyserver.Fault // nil = clear
	index    int                // position in the experiment's fault list
}

func faultOps(faults []experiments.Fault, duration time.Duration) []faultOp {
	var ops []faultOp
	for i, f := range faults {
		ops = append(ops, faultOp{at: f.At, instance: f.Instance, fault: f.Spec, index: i})
		if f.Until != 0 && f.Until < duration {
			ops = append(ops, faultOp{at: f.Until, instance: f.Instance, index: i})
		}
	}
	// Clears before sets at the same instant, so back-to-back windows on one
	// instance hand over cleanly.
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].at != ops[j].at {
			return ops[i].at < ops[j].at
		}
		return ops[i].fault == nil && ops[j].fault != nil
	})
	return ops
}

// faultRunner applies a fault schedule to a fleet through the control API,
// relative to the start of the attack. Operations due at 0 are applied
// before the attack starts (apply), the rest by a goroutine (run).
type faultRunner struct {
	fleet []Backend
	ops   []faultOp

	mu      sync.Mutex
	err     error
	applied []time.Duration // when each op was actually applied, -1 if not
}

func newFaultRunner(fleet []Backend, faults []experiments.Fault, duration time.Duration) *faultRunner {
	ops := faultOps(faults, duration)
	applied := make([]time.Duration, len(ops))
	for i := range applied {
		applied[i] = -1
	}
	return &faultRunner{fleet: fleet, ops: ops, applied: applied}
}

func (r *faultRunner) do(ctx context.Context, i int, at time.Duration) error {
	op := r.ops[i]
	if op.instance < 0 || op.instance >= len(r.fleet) {
		return fmt.Errorf("faults[%d]: instance %d does not exist (the fleet has %d)", op.index, op.instance, len(r.fleet))
	}
	ctl := r.fleet[op.instance].Control
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	if op.fault == nil {
		err = ctl.ClearFault(ctx)
	} else {
		err = ctl.SetFault(ctx, op.fault)
	}
	if err != nil {
		verb := "set"
		if op.fault == nil {
			verb = "clear"
		}
		return fmt.Errorf("faults[%d]: %s fault on instance %d: %w", op.index, verb, op.instance, err)
	}
	r.mu.Lock()
	r.applied[i] = at
	r.mu.Unlock()
	return nil
}

// applyInitial applies the operations due at time 0.
func (r *faultRunner) applyInitial(ctx context.Context) error {
	for i, op := range r.ops {
		if op.at > 0 {
			break
		}
		if err := r.do(ctx, i, 0); err != nil {
			return err
		}
	}
	return nil
}

// run applies the remaining operations at their times after start, until
// ctx is done. The first error is kept for err and calls onErr.
func (r *faultRunner) run(ctx context.Context, start time.Time, onErr func(error)) {
	for i, op := range r.ops {
		if op.at <= 0 {
			continue
		}
		t := time.NewTimer(time.Until(start.Add(op.at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := r.do(ctx, i, time.Since(start)); err != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
			onErr(err)
			return
		}
	}
}

func (r *faultRunner) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// windows returns when each fault was actually active, in seconds from the
// start, clipped to end (the attack's elapsed time).
func (r *faultRunner) windows(faults []experiments.Fault, end time.Duration) []window {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := make([]window, len(faults))
	for i := range ws {
		ws[i] = window{start: -1, end: end}
	}
	for i, op := range r.ops {
		if r.applied[i] < 0 {
			continue
		}
		if op.fault != nil {
			ws[op.index].start = r.applied[i]
		} else {
			ws[op.index].end = r.applied[i]
		}
	}
	return ws
}

type window struct{ start, end time.Duration }

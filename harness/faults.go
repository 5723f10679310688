package harness

import (
	"context"
	"fmt"
	"net/url"
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
	clears   faultyserver.Fault // for a clear: the fault it ends
	index    int                // position in the experiment's fault list
}

func faultOps(faults []experiments.Fault, duration time.Duration) []faultOp {
	var ops []faultOp
	for i, f := range faults {
		ops = append(ops, faultOp{at: f.At, instance: f.Instance, fault: f.Spec, index: i})
		if f.Until != 0 && f.Until < duration {
			ops = append(ops, faultOp{at: f.Until, instance: f.Instance, clears: f.Spec, index: i})
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
	fleet Fleet
	chaos ContainerChaos              // nil when the fleet has no containers
	moved func(id int, base *url.URL) // told when a restarted instance's address changed
	ops   []faultOp

	mu      sync.Mutex
	err     error
	applied []time.Duration // when each op was actually applied, -1 if not
}

func newFaultRunner(fleet Fleet, faults []experiments.Fault, duration time.Duration, moved func(int, *url.URL)) *faultRunner {
	ops := faultOps(faults, duration)
	applied := make([]time.Duration, len(ops))
	for i := range applied {
		applied[i] = -1
	}
	chaos, _ := fleet.(ContainerChaos)
	return &faultRunner{fleet: fleet, chaos: chaos, moved: moved, ops: ops, applied: applied}
}

// CheckProvider returns an error naming the first fault of exp that p's
// backends cannot take (a container-level fault on backends that are not
// containers). Run checks it too; callers use it to fail before any work.
func CheckProvider(exp *experiments.Experiment, p Provider) error {
	if err := containerFaultCheck(exp.Faults, p); err != nil {
		return fmt.Errorf("%s: %w", exp.Source, err)
	}
	return nil
}

func containerFaultCheck(faults []experiments.Fault, p Provider) error {
	if cp, ok := p.(ContainerProvider); ok && cp.ContainerFaults() {
		return nil
	}
	for i, f := range faults {
		if faultyserver.IsContainerFault(f.Spec) {
			return fmt.Errorf("faults[%d]: mode %q acts on containers, which %s backends do not have; run with --backends docker",
				i, f.Spec.Mode(), p.Name())
		}
	}
	return nil
}

func (r *faultRunner) do(ctx context.Context, i int, at time.Duration) error {
	op := r.ops[i]
	backends := r.fleet.Backends()
	if op.instance < 0 || op.instance >= len(backends) {
		return fmt.Errorf("faults[%d]: instance %d does not exist (the fleet has %d)", op.index, op.instance, len(backends))
	}
	verb, f := "set", op.fault
	if f == nil {
		verb, f = "clear", op.clears
	}
	var err error
	if faultyserver.IsContainerFault(f) {
		err = r.container(ctx, op.instance, f, op.fault != nil)
	} else {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ctl := backends[op.instance].Control
		if op.fault == nil {
			err = ctl.ClearFault(cctx)
		} else {
			err = ctl.SetFault(cctx, op.fault)
		}
		cancel()
	}
	if err != nil {
		return fmt.Errorf("faults[%d]: %s %s fault on instance %d: %w", op.index, verb, f.Mode(), op.instance, err)
	}
	r.mu.Lock()
	r.applied[i] = at
	r.mu.Unlock()
	return nil
}

// container applies (set) or recovers from (!set) a container-level fault.
func (r *faultRunner) container(ctx context.Context, id int, f faultyserver.Fault, set bool) error {
	if r.chaos == nil {
		return fmt.Errorf("mode %q acts on containers; run with --backends docker", f.Mode())
	}
	// A restart waits for the container to answer its health check.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch f := f.(type) {
	case faultyserver.Pause:
		if set {
			return r.chaos.Pause(ctx, id)
		}
		return r.chaos.Unpause(ctx, id)
	case faultyserver.Kill:
		if set {
			return r.chaos.Kill(ctx, id)
		}
		if err := r.chaos.Restart(ctx, id); err != nil {
			return err
		}
		if r.moved != nil {
			r.moved(id, r.fleet.Backends()[id].URL)
		}
		return nil
	case faultyserver.CPU:
		if set {
			return r.chaos.SetCPU(ctx, id, f.CPUs)
		}
		return r.chaos.SetCPU(ctx, id, 0)
	default:
		return fmt.Errorf("mode %q: no container action for it", f.Mode())
	}
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

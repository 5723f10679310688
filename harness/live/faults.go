package live

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// faultRunner plays a fault schedule on a fleet, relative to the start of
// the attack: a server fault through the instance's control API, a
// container fault through the fleet's faultyserver.Containers. Operations
// due at 0 are applied before the attack starts (applyInitial), the rest
// by a goroutine (run).
type faultRunner struct {
	fleet      fleet.Fleet
	containers faultyserver.Containers     // nil when the fleet has no containers
	moved      func(id int, base *url.URL) // told an instance's address after a container fault is healed
	ops        []engine.FaultOp
	// dead, when set, knows the instances that crashed: a fault that
	// cannot reach one of them is skipped with a note, not an error.
	dead *incidents

	mu  sync.Mutex
	err error
	// applied marks the operations applied (mark), for heal.
	applied []bool
}

func newFaultRunner(fl fleet.Fleet, faults []experiments.Fault, duration time.Duration, moved func(int, *url.URL)) *faultRunner {
	c, _ := fl.(faultyserver.Containers)
	return &faultRunner{fleet: fl, containers: c, moved: moved, ops: engine.FaultOps(faults, duration)}
}

// do applies operation i.
func (r *faultRunner) do(ctx context.Context, i int) error {
	op := r.ops[i]
	backends := r.fleet.Backends()
	if op.Instance < 0 || op.Instance >= len(backends) {
		return fmt.Errorf("faults[%d]: instance %d does not exist (the fleet has %d)", op.Index, op.Instance, len(backends))
	}
	verb, f := "set", op.Subject()
	if !op.Set() {
		verb = "clear"
	}
	var err error
	if cf, ok := f.(faultyserver.ContainerFault); ok {
		err = r.container(ctx, op.Instance, cf, op.Set())
	} else {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ctl := backends[op.Instance].Control
		switch {
		case ctl == nil: // fleet.Check refuses such a schedule up front
			err = fmt.Errorf("instance %d has no control API (no sidecar)", op.Instance)
		case op.Set():
			// Marked first: a set the attack's end cancels may still
			// have reached the instance, and an abort's heal must clear
			// it (clearing a fault that is not there is harmless).
			r.mark(i)
			err = ctl.SetFault(cctx, op.Fault)
		default:
			err = ctl.ClearFault(cctx)
		}
		cancel()
	}
	if err != nil {
		return fmt.Errorf("faults[%d]: %s %s fault on instance %d: %w", op.Index, verb, f.Mode(), op.Instance, err)
	}
	r.mark(i)
	return nil
}

// container inflicts (set) or heals (!set) a container fault.
func (r *faultRunner) container(ctx context.Context, id int, f faultyserver.ContainerFault, set bool) error {
	if r.containers == nil {
		return fmt.Errorf("mode %q acts on containers; run with --backends docker", f.Mode())
	}
	// A restart waits for the container to answer its health check.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if set {
		return f.Inflict(ctx, r.containers, id)
	}
	if err := f.Heal(ctx, r.containers, id); err != nil {
		return err
	}
	if f.Relocates() && r.moved != nil {
		r.moved(id, r.fleet.Backends()[id].URL)
	}
	return nil
}

// applyInitial applies the operations due at time 0.
func (r *faultRunner) applyInitial(ctx context.Context) error {
	for i, op := range r.ops {
		if op.At > 0 {
			break
		}
		if err := r.do(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// run applies the remaining operations at their times after start, until
// ctx is done. The first error is kept for error and calls onErr.
func (r *faultRunner) run(ctx context.Context, start time.Time, onErr func(error)) {
	for i, op := range r.ops {
		if op.At <= 0 {
			continue
		}
		t := time.NewTimer(time.Until(start.Add(op.At)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := r.do(ctx, i); err != nil {
			if ctx.Err() != nil {
				return // the attack ended or was interrupted meanwhile
			}
			if r.dead.skip(op.Instance, time.Since(start), err) {
				continue
			}
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

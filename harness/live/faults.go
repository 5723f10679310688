package live

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/owner"
	"github.com/lbchaos/lbchaos/harness/netfault"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// faultRunner plays a fault schedule on a fleet, relative to the start of
// the attack: a server fault through the instance's control API, a
// container fault through the fleet's faultyserver.Containers, a network
// fault through packet filter rules on the instance's port (netfault).
// Operations due at 0 are applied before the attack starts
// (applyInitial), the rest by a goroutine (run), which removes every
// network fault's rules when the attack ends, however it ends.
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

	// rules carry out the network faults, from applyInitial until run
	// returns; nil when the schedule has none. Only applyInitial and the
	// goroutine of run use it.
	rules *netfault.Rules
	// zones are the experiment's zones, by index: a partition's client
	// zones send from transport.ZoneSource of theirs.
	zones []string
}

func newFaultRunner(fl fleet.Fleet, exp *experiments.Experiment, faults []experiments.Fault, moved func(int, *url.URL)) *faultRunner {
	c, _ := fl.(faultyserver.Containers)
	return &faultRunner{fleet: fl, containers: c, moved: moved, ops: engine.FaultOps(faults, exp.Duration), zones: exp.ZoneNames()}
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
	} else if nf, ok := f.(faultyserver.NetworkFault); ok {
		err = r.network(op, nf, backends[op.Instance])
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

// network applies or removes (op.Set) the rules of network fault f on
// op's instance, reached at b: on all its traffic, or on that of the
// clients of the zones op.From names (a partition), which send from their
// zone's address (transport.ZoneSource).
func (r *faultRunner) network(op engine.FaultOp, f faultyserver.NetworkFault, b fleet.Backend) error {
	if r.rules == nil {
		return fmt.Errorf("mode %q: no packet filter rules were set up for the attack", f.Mode())
	}
	// One key per entry of the schedule: a partition's rules and another
	// fault's on the same instance come and go apart.
	key := fmt.Sprintf("fault-%d-instance-%d", op.Index, op.Instance)
	if !op.Set() {
		return r.rules.Remove(key)
	}
	t, err := netfault.TargetOf(b.URL)
	if err != nil {
		return fmt.Errorf("mode %q needs the instance's port in this host's network namespace: %w", f.Mode(), err)
	}
	for _, name := range op.From {
		z := slices.Index(r.zones, name)
		if z < 0 {
			return fmt.Errorf("mode %q: unknown client zone %q", f.Mode(), name)
		}
		t.Sources = append(t.Sources, transport.ZoneSource(z))
	}
	return r.rules.Apply(key, f, t)
}

// applyInitial sets up the network faults' rules when the schedule has
// one (after removing what killed runs left), then applies the operations
// due at time 0. On error no rule is left.
func (r *faultRunner) applyInitial(ctx context.Context) (err error) {
	if err := r.openRules(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			r.closeRules()
		}
	}()
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

// openRules creates the attack's packet filter chain when its schedule
// has a network fault.
func (r *faultRunner) openRules() error {
	var first *engine.FaultOp
	for i, op := range r.ops {
		if faultyserver.IsNetworkFault(op.Subject()) {
			first = &r.ops[i]
			break
		}
	}
	if first == nil {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("faults[%d].mode: %q %w", first.Index, first.Subject().Mode(), err)
	}
	if err := netfault.Available(); err != nil {
		return fail(err)
	}
	if _, err := netfault.SweepStale(r.log()); err != nil {
		// Leftovers of other runs do not stop this one.
		fmt.Fprintf(r.log(), "      warning: packet filter rules of dead runs not all removed: %v\n", err)
	}
	run, err := owner.RunID("")
	if err != nil {
		return fail(err)
	}
	who, err := owner.Self()
	if err != nil {
		return fail(err)
	}
	if r.rules, err = netfault.New(run, who); err != nil {
		return fail(err)
	}
	return nil
}

// closeRules removes the network faults' rules, every one, and notes a
// failure to (lbchaos clean removes what is left).
func (r *faultRunner) closeRules() {
	if r.rules == nil {
		return
	}
	if err := r.rules.Close(); err != nil {
		err = fmt.Errorf("network faults: removing the packet filter rules of chain %s: %w; lbchaos clean removes them", r.rules.Chain(), err)
		fmt.Fprintf(r.log(), "      %v\n", err)
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
}

// log is where the runner's own lines go: the job's log.
func (r *faultRunner) log() io.Writer {
	if r.dead != nil && r.dead.log != nil {
		return r.dead.log
	}
	return io.Discard
}

// run applies the remaining operations at their times after start, until
// ctx is done. The first error is kept for error and calls onErr. When it
// returns, at the end of the attack (ctx done: the load ended, was
// interrupted or aborted) or at an error, no network fault's rule is
// left.
func (r *faultRunner) run(ctx context.Context, start time.Time, onErr func(error)) {
	defer r.closeRules()
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
	if r.rules != nil {
		<-ctx.Done() // a network fault lasts until the attack's end
	}
}

func (r *faultRunner) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

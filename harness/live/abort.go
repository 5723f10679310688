package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
)

// An abort condition (experiments.Abort) is judged by the result loop
// over the results it reads (engine.AbortWatch); when one trips, the loop
// stops the load and cancels the requests in flight as an interrupt does,
// and the attack heals every fault the schedule had set (heal) as soon as
// the background has stopped, before anything is measured.

// healTimeout bounds the healing of all faults after an abort: a server
// fault is one control call, a container fault may restart a container.
const healTimeout = time.Minute

// checkAbort rejects abort conditions a distributed run cannot judge: its
// results reach the coordinator as per-second histograms, not one by one.
func checkAbort(exp *experiments.Experiment) error {
	if len(exp.Abort) > 0 && exp.Generators > 1 {
		return fmt.Errorf("abort: the real engine judges abort conditions in one load generator; with generators (%d) the results reach the coordinator a second at a time. Run with one generator, or leave abort out", exp.Generators)
	}
	return nil
}

// judgeTicker returns the channel on which the loop judges its abort
// conditions, nil without any, and the function that stops it.
func (l *resultLoop) judgeTicker() (<-chan time.Time, func()) {
	if l.abort == nil {
		return nil, func() {}
	}
	t := time.NewTicker(l.abort.Every())
	return t.C, t.Stop
}

// judge judges the abort conditions at now; when one trips it stops the
// load, cancels the requests in flight and records the abort in out. It
// reports whether the loop is to stop judging: tripped, or the attack's
// duration is over.
func (l *resultLoop) judge(now time.Time, out *loopResult) bool {
	elapsed := now.Sub(l.start)
	if elapsed >= l.job.Exp.Duration {
		return true // judged only before the end, as the simulator does
	}
	a := l.abort.Judge(elapsed)
	if a == nil {
		return false
	}
	out.abort, out.interrupted = a, elapsed
	l.load.Abort()
	l.load.Stop()
	return true
}

// mark records that operation i of the schedule was applied, for heal.
func (r *faultRunner) mark(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		r.applied = make([]bool, len(r.ops))
	}
	r.applied[i] = true
}

// active returns, by instance, the fault operations applied whose fault
// is still set: those the schedule set and had not cleared.
func (r *faultRunner) active() map[int]engine.FaultOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := map[int]engine.FaultOp{}
	for i, op := range r.ops {
		if i >= len(r.applied) || !r.applied[i] {
			continue
		}
		if op.Set() {
			set[op.Instance] = op
		} else {
			delete(set, op.Instance)
		}
	}
	return set
}

// heal clears, all at once, every fault the schedule set and had not
// cleared: a server fault through the instance's control API, a container
// fault by healing it. The runner must have stopped (background.end). It
// returns the instances healed, in order, and every failure.
func (r *faultRunner) heal(ctx context.Context) ([]int, error) {
	set := r.active()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	backends := r.fleet.Backends()
	for id, op := range set {
		wg.Go(func() {
			var err error
			if cf, ok := op.Fault.(faultyserver.ContainerFault); ok {
				err = r.container(ctx, id, cf, false)
			} else if id < len(backends) && backends[id].Control != nil {
				err = backends[id].Control.ClearFault(ctx)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("faults[%d]: heal %s fault on instance %d: %w", op.Index, op.Fault.Mode(), id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ids := make([]int, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, errors.Join(errs...)
}

// healAfterAbort heals every fault after abort a tripped and returns the
// notes for the measurement; it logs what it did.
func (a *attack) healAfterAbort(ctx context.Context, ab *reports.Abort) []string {
	began := time.Now()
	ids, err := a.faults.heal(ctx)
	name := a.job.Name()
	fmt.Fprintf(a.job.Log, "      aborted at %.1f s: %s; load stopped, %d faults healed in %d ms\n",
		ab.AtS, ab.Text(), len(ids), time.Since(began).Milliseconds())
	notes := []string{fmt.Sprintf("%s: aborted at %.1f s: %s over %gs was %.3g; the load stopped and the requests in flight were cancelled.",
		name, ab.AtS, ab.Condition(), ab.WindowS, ab.Value)}
	if len(ids) > 0 {
		notes = append(notes, fmt.Sprintf("%s: the abort healed the faults of instances %s.", name, idList(ids)))
	}
	if err != nil {
		notes = append(notes, fmt.Sprintf("%s: the abort could not heal every fault: %v", name, err))
	}
	return notes
}

// idList writes ids as "0, 1, 2".
func idList(ids []int) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(id)
	}
	return s
}

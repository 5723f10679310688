package live

import (
	"context"
	"fmt"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/reports"
)

// Kinds of the events of a Deployment's rolling restart
// (instances.kube.rollout); their Instance is reports.ProxyInstance, the
// whole fleet.
const (
	EventRolloutStart = "rollout-start"
	EventRolloutDone  = "rollout-done"
)

// checkWorkload reports why exp's instances.kube.workload cannot run on
// provider p: a Deployment's pods run behind a Service.
func checkWorkload(exp *experiments.Experiment, p fleet.Provider) error {
	if exp.Instances.Kube.Workload != experiments.WorkloadDeployment {
		return nil
	}
	if err := services(p); err != nil {
		return fmt.Errorf("instances.kube.workload: %s runs the instances as a Deployment behind a Service: %w", experiments.WorkloadDeployment, err)
	}
	return nil
}

// runRollout starts the rolling restart of exp's instances.kube.rollout
// at its time from start, records its start and its end as events of w,
// and notes a rollout that had not ended when ctx did (the load's end).
func runRollout(ctx context.Context, fl fleet.Fleet, exp *experiments.Experiment, start time.Time, w *incidents) {
	r := exp.Instances.Kube.Rollout
	roller, ok := fl.(fleet.Roller)
	if r == nil || !ok {
		return
	}
	timer := time.NewTimer(time.Until(start.Add(r.At)))
	select {
	case <-ctx.Done():
		timer.Stop()
		return
	case <-timer.C:
	}
	done, err := roller.Rollout(ctx)
	if err != nil {
		w.note(fmt.Sprintf("%s: the rolling restart at %v did not start: %v", w.name, r.At, err))
		return
	}
	t := w.add(time.Now(), reports.Event{Instance: reports.ProxyInstance, Kind: EventRolloutStart,
		Detail: fmt.Sprintf("rolling restart of the Deployment (max_surge %s, max_unavailable %s)", r.MaxSurge, r.MaxUnavailable)})
	fmt.Fprintf(w.log, "      rolling restart at %.1f s\n", t)
	select {
	case <-done:
		if ctx.Err() == nil {
			t := w.add(time.Now(), reports.Event{Instance: reports.ProxyInstance, Kind: EventRolloutDone, Detail: "every replica updated and available"})
			fmt.Fprintf(w.log, "      rollout complete at %.1f s\n", t)
			return
		}
	case <-ctx.Done():
	}
	w.note(fmt.Sprintf("%s: the rolling restart begun at %v had not completed when the load ended: lengthen duration or start it earlier (instances.kube.rollout.at).", w.name, r.At))
}

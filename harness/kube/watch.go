package kube

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

var _ fleet.Watcher = (*kubeFleet)(nil)

// watchPeriod is how often Watch lists the fleet's pods: a crash's time
// comes from the kubelet's report, not from when it is seen, so a second
// costs the report nothing and the API server little.
const watchPeriod = time.Second

// logTimeout bounds the fetch of a crashed container's last lines.
const logTimeout = 5 * time.Second

// Watch implements fleet.Watcher by listing the fleet's pods every
// watchPeriod. A container of an instance's pod that terminated (its pods
// restart nothing: restartPolicy Never), or the pod gone or failed, that
// no scheduled kill explains (kill marks the instance down before it
// deletes the pod), is reported once as a fatal crash, with the exit code
// and reason and the container's last lines of output (fetched by
// Crash.Log). What had ended before Watch began is not reported, and
// neither is a pod being deleted (the harness closing its fleet). A
// crash is seen within a period of the kubelet's report of it, and dated
// by that report (a pod gone: by when it is seen).
func (f *kubeFleet) Watch(report func(fleet.Crash)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	sel := metav1.ListOptions{LabelSelector: labelFleet + "=" + strconv.Itoa(f.seq)}
	w := &podWatch{f: f, report: report, seen: map[string]bool{}, gone: map[int]bool{}}
	pods, err := f.p.cs.listPods(ctx, f.p.ns, sel)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube backends: list pods: %w", err)
	}
	w.check(pods.Items, false)
	return every(ctx, cancel, watchPeriod, func() {
		// A failed list (the API server busy) is tried again next
		// period; the pods' statuses wait for it.
		if pods, err := f.p.cs.listPods(ctx, f.p.ns, sel); err == nil {
			w.check(pods.Items, true)
		}
	}), nil
}

// every calls fn every period, from a goroutine of its own, until ctx is
// done; the stop it returns cancels ctx and waits until fn is no longer
// called, and is idempotent.
func every(ctx context.Context, cancel context.CancelFunc, period time.Duration, fn func()) (stop func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn()
		}
	})
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// podWatch is the state of one Watch: what it has reported or found
// ended when it began.
type podWatch struct {
	f      *kubeFleet
	report func(fleet.Crash)
	seen   map[string]bool // pod uid + "/" + container: terminated, reported or found so
	gone   map[int]bool    // instance id: its pod was missing at the last report
}

// check looks at the fleet's pods as listed; it reports what it finds
// only when report is true (the first list records what had ended).
func (w *podWatch) check(pods []corev1.Pod, report bool) {
	byName := make(map[string]*corev1.Pod, len(pods))
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	for name, id := range w.f.podIDs() {
		in := w.f.insts[id]
		if in.down.Load() {
			continue // killed by the schedule, until restarted
		}
		pod := byName[name]
		if pod == nil {
			// A Deployment's pods go when it replaces them, and every
			// step of that is its controller's, not a crash.
			if !w.gone[in.id] && w.f.deploy == nil {
				w.gone[in.id] = true
				if report {
					w.report(fleet.Crash{Instance: in.id, Time: time.Now(), Fatal: true,
						Detail: fmt.Sprintf("pod %s/%s is gone: deleted by someone other than lbchaos, or evicted", w.f.p.ns, name)})
				}
			}
			continue
		}
		w.gone[in.id] = false
		if pod.DeletionTimestamp != nil {
			continue
		}
		ended := false
		for _, cs := range pod.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				continue
			}
			ended = true
			key := string(pod.UID) + "/" + cs.Name
			if w.seen[key] {
				continue
			}
			w.seen[key] = true
			if report {
				w.report(w.crash(in.id, pod.Name, cs.Name, t))
			}
		}
		// A failed pod whose containers report no end: the kubelet
		// evicted it, or could not run it.
		if key := string(pod.UID) + "/"; !ended && pod.Status.Phase == corev1.PodFailed && !w.seen[key] {
			w.seen[key] = true
			if report {
				w.report(fleet.Crash{Instance: in.id, Time: time.Now(), Fatal: true,
					Detail: fmt.Sprintf("pod %s failed: %s", pod.Name, cmp.Or(pod.Status.Reason, pod.Status.Message, "no reason given"))})
			}
		}
	}
}

// crash describes container's end in pod of instance id.
func (w *podWatch) crash(id int, pod, container string, t *corev1.ContainerStateTerminated) fleet.Crash {
	at := t.FinishedAt.Time
	if at.IsZero() {
		at = time.Now()
	}
	detail := fmt.Sprintf("container %s exited with code %d", container, t.ExitCode)
	if t.Signal != 0 {
		detail += fmt.Sprintf(", signal %d", t.Signal)
	}
	if t.Reason != "" {
		detail += " (" + t.Reason + ")"
	}
	p := w.f.p
	return fleet.Crash{Instance: id, Time: at, Fatal: true, Detail: detail, Log: func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
		defer cancel()
		tail := int64(fleet.LogLines)
		rc, err := p.cs.logs(ctx, p.ns, pod, &corev1.PodLogOptions{Container: container, TailLines: &tail})
		if err != nil {
			return []string{"(its log could not be read: " + err.Error() + ")"}
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
		lines := fleet.LastLines(string(b), fleet.LogLines)
		if err != nil {
			lines = append(lines, "(its log was cut short: "+err.Error()+")")
		}
		return lines
	}}
}

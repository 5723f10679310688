package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// Deployment mode (instances.kube.workload: deployment): the instances are
// the pods of a Deployment behind the fleet's Service, and a rolling
// restart replaces them. Every pod of a Deployment comes from one
// template, so a pod starts without an identity (faultyserver.Unidentified)
// and with a readiness gate, identifiedCondition, that keeps it out of the
// Service's ready endpoints. The harness names each new pod in the order
// it finds them ready to serve: it gives the server the next instance id
// and its seed through the control API, labels the pod with the id and
// only then sets the gate's condition. So every answer names its pod, and
// no request reaches a pod that has no id.
//
// The ids are slots a run knows in advance: the Deployment's replicas,
// and with a rollout as many again for the pods the rollout brings (a
// rolling restart replaces each pod once). The report shows them all:
// instances 0 to replicas-1 are the first pods, the rest the rollout's in
// the order they became ready. A pod beyond the slots (the ReplicaSet
// replacing a pod that died) is left unidentified, out of the Service,
// with a note.

// identifiedCondition is the readiness gate of a Deployment's pods.
const identifiedCondition corev1.PodConditionType = "io.lbchaos/identified"

// restartedAnnotation is the template annotation whose change starts a
// rolling restart, as kubectl rollout restart's does.
const restartedAnnotation = "io.lbchaos/restarted-at"

// instanceSlots is how many instances a fleet of in has: its pods, and with a
// Deployment's rollout those the rollout brings.
func instanceSlots(in experiments.Instances) int {
	if in.Kube.Workload == experiments.WorkloadDeployment && in.Kube.Rollout != nil {
		return 2 * in.Count
	}
	return in.Count
}

// deployment is a fleet's Deployment and the pods it has named.
type deployment struct {
	name string
	apps *api

	mu       sync.Mutex
	byPod    map[string]int   // pod name → instance id, once its server has it
	pending  map[string]int   // pod name → the id it is being given
	restarts map[string]int32 // pod name → its containers' restarts when named
	beyond   map[string]bool  // pods seen after the slots ran out
	next     int              // the next id to give (or being given)
	notes    []string
	stop     func() // ends the naming loop; nil until it runs
}

// halt ends the naming loop, if it runs; idempotent.
func (d *deployment) halt() {
	d.mu.Lock()
	stop := d.stop
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// podIDs returns the pods of f that have an instance id, by name.
func (f *kubeFleet) podIDs() map[string]int {
	if d := f.deploy; d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		return maps.Clone(d.byPod)
	}
	out := make(map[string]int, len(f.insts))
	for _, in := range f.insts {
		out[in.name] = in.id
	}
	return out
}

// startDeployment creates fleet seq as a Deployment of spec.Count pods and
// its Service, names the pods as they become ready, and returns once all
// are named and the Service lists them.
func (p *Provider) startDeployment(ctx context.Context, spec fleet.Spec, seq int) (*kubeFleet, error) {
	if !p.opts.Service {
		return nil, fmt.Errorf("instances.kube.workload %s: a Deployment's pods run behind a Service, and these backends were started without (Options.Service; lbchaos run sets it for a Deployment)", experiments.WorkloadDeployment)
	}
	apps, err := newAppsAPI(p.cfg)
	if err != nil {
		return nil, err
	}
	slots := instanceSlots(spec.Instances)
	f := &kubeFleet{p: p, spec: spec, seq: seq, insts: make([]*instance, slots)}
	bs := make([]fleet.Backend, slots)
	for id := range slots {
		f.insts[id] = &instance{id: id, port: podPort}
		bs[id] = fleet.Backend{ID: id}
	}
	f.SetAll(bs)
	d := &deployment{name: serviceName(seq), apps: apps, byPod: map[string]int{}, pending: map[string]int{}, restarts: map[string]int32{}, beyond: map[string]bool{}}
	f.deploy = d
	dep, err := p.deploymentFor(spec, seq, d.name)
	if err == nil {
		err = apps.create(ctx, p.ns, "deployments", dep, &appsv1.Deployment{})
	}
	if err != nil {
		f.Terminate()
		return nil, fmt.Errorf("create Deployment %s/%s: %w", p.ns, d.name, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	stop := every(lctx, cancel, rotationPeriod, func() { f.nameReady(lctx) })
	d.mu.Lock()
	d.stop = stop
	d.mu.Unlock()
	var stuck string // why a pod will not start: no use waiting
	err = waitFor(ctx, p.opts.StartTimeout, func() (bool, string) {
		if stuck = f.stuck(ctx); stuck != "" {
			return true, ""
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.byPod) >= spec.Count, fmt.Sprintf("%d of %d pods of Deployment %s named and ready", len(d.byPod), spec.Count, d.name)
	})
	if err == nil && stuck != "" {
		err = fmt.Errorf("Deployment %s/%s: %s", p.ns, d.name, stuck)
	}
	if err == nil {
		f.service, err = p.expose(ctx, seq, spec.Count)
	}
	if err != nil {
		f.Terminate()
		return nil, err
	}
	return f, nil
}

// deploymentFor is the Deployment of fleet seq: spec.Count replicas of
// the pod of an unidentified instance, with the readiness gate, selected
// by the fleet's labels (the Service's selector), rolled as
// instances.kube.rollout says.
func (p *Provider) deploymentFor(spec fleet.Spec, seq int, name string) (*appsv1.Deployment, error) {
	pod, err := p.podFor(spec, seq, &instance{id: faultyserver.Unidentified, port: podPort})
	if err != nil {
		return nil, err
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways // the only one a Deployment takes
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: identifiedCondition}}
	labels := map[string]string{LabelRun: p.runID, labelFleet: strconv.Itoa(seq)}
	replicas := int32(spec.Count)
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	if r := spec.Kube.Rollout; r != nil {
		surge, unavailable := intstr.Parse(r.MaxSurge), intstr.Parse(r.MaxUnavailable)
		strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: strategy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod.Spec,
			},
		},
	}, nil
}

// stuck returns why a pod of f's Deployment will never start, or "".
func (f *kubeFleet) stuck(ctx context.Context) string {
	pods, err := f.p.cs.listPods(ctx, f.p.ns, f.podSelector())
	if err != nil {
		return ""
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		why := podProblem(pod)
		for _, cs := range pod.Status.ContainerStatuses {
			// A Deployment's pods restart: a crash shows as a back-off.
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				why = fmt.Sprintf("container %s keeps exiting (%s)", cs.Name, w.Reason)
			}
		}
		if why != "" {
			return fmt.Sprintf("pod %s cannot start: %s%s", pod.Name, why, f.p.diagnose(pod.Name))
		}
	}
	return ""
}

func (f *kubeFleet) podSelector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: labelFleet + "=" + strconv.Itoa(f.seq)}
}

// nameReady gives each pod of the Deployment that serves and has no id yet
// the next one: through its control API (the server answers with it from
// then on), its label, and last its readiness gate's condition, which lets
// the kubelet report it ready. The id is reserved for the pod before the
// call, so a step that fails, or whose answer is lost, is tried again next
// period with the same id. A named pod whose container restarted (its
// server starts unnamed again) is given its id again.
func (f *kubeFleet) nameReady(ctx context.Context) {
	d := f.deploy
	pods, err := f.p.cs.listPods(ctx, f.p.ns, f.podSelector())
	if err != nil {
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" || !containersReady(pod) {
			continue
		}
		restarts := int32(0)
		for _, cs := range pod.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		d.mu.Lock()
		id, named := d.byPod[pod.Name]
		again := named && restarts > d.restarts[pod.Name]
		if !named {
			var reserved bool
			if id, reserved = d.pending[pod.Name]; !reserved && d.next < len(f.insts) {
				id = d.next
				d.pending[pod.Name] = id
				d.next++
				reserved = true
			}
			if !reserved && !d.beyond[pod.Name] {
				d.beyond[pod.Name] = true
				d.notes = append(d.notes, fmt.Sprintf("pod %s of Deployment %s came after the run's %d instances were all named (a replacement the run did not plan for): it was left unnamed and out of the Service.", pod.Name, d.name, len(f.insts)))
			}
			if !reserved {
				d.mu.Unlock()
				continue
			}
		}
		d.mu.Unlock()
		if !named || again {
			ctl := f.p.control(&instance{name: pod.Name, port: podPort}, nil)
			if err := ctl.Identify(ctx, faultyserver.Identity{ID: id, Seed: fleet.InstanceSeed(f.spec.Seed, id)}); err != nil {
				continue
			}
			in := f.insts[id]
			in.mu.Lock()
			in.name = pod.Name
			in.mu.Unlock()
			f.Set(id, fleet.Backend{ID: id, URL: &url.URL{Scheme: "http", Host: urlHost(pod.Status.PodIP, podPort)}, Control: ctl})
			d.mu.Lock()
			d.byPod[pod.Name] = id
			delete(d.pending, pod.Name)
			d.restarts[pod.Name] = restarts
			d.mu.Unlock()
		}
		if !gateSet(pod) {
			_ = f.openGate(ctx, pod.Name, id) // tried again next period
		}
	}
}

// openGate labels pod name with instance id and sets its readiness gate's
// condition.
func (f *kubeFleet) openGate(ctx context.Context, pod string, id int) error {
	label, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{labelInstance: strconv.Itoa(id)}}})
	if err := f.p.cs.patch(ctx, f.p.ns, "pods", pod, "", types.StrategicMergePatchType, label); err != nil {
		return err
	}
	cond, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: identifiedCondition, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		Reason: "Named", Message: "lbchaos gave the pod instance id " + strconv.Itoa(id),
	}}}})
	return f.p.cs.patch(ctx, f.p.ns, "pods", pod, "status", types.StrategicMergePatchType, cond)
}

// containersReady reports whether every container of pod runs and passes
// its readiness probe: the pod is ready but for its gate.
func containersReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.ContainersReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gateSet reports whether pod's readiness gate condition is true.
func gateSet(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == identifiedCondition {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Rollout implements fleet.Roller: it starts a rolling restart of f's
// Deployment (a new template annotation, as kubectl rollout restart) and
// returns; done is closed once the Deployment reports the rollout
// complete (every replica updated and available, none of the old left),
// or when ctx ends.
func (f *kubeFleet) Rollout(ctx context.Context) (done <-chan struct{}, err error) {
	d := f.deploy
	if d == nil {
		return nil, fmt.Errorf("kube backends: a rolling restart needs instances.kube.workload: %s", experiments.WorkloadDeployment)
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{restartedAnnotation: time.Now().UTC().Format(time.RFC3339Nano)},
	}}}})
	if err := d.apps.patch(ctx, f.p.ns, "deployments", d.name, "", types.StrategicMergePatchType, patch); err != nil {
		return nil, fmt.Errorf("kube backends: roll Deployment %s/%s: %w", f.p.ns, d.name, err)
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		_ = waitFor(ctx, time.Hour, func() (bool, string) {
			var dep appsv1.Deployment
			if err := d.apps.get(ctx, f.p.ns, "deployments", d.name, &dep); err != nil {
				return false, err.Error()
			}
			return rolledOut(&dep), "rolling"
		})
	}()
	return ch, nil
}

// rolledOut reports whether dep's latest rollout is complete, as kubectl
// rollout status decides it.
func rolledOut(dep *appsv1.Deployment) bool {
	s, want := dep.Status, int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	return s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

var _ fleet.Roller = (*kubeFleet)(nil)

// RolloutNotes implements fleet.Roller: what naming the pods noted, once.
func (f *kubeFleet) RolloutNotes() []string {
	d := f.deploy
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.notes
	d.notes = nil
	return out
}

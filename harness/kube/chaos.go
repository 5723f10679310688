package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// faultTimeout bounds the wait for a fault to take effect: a pod's server
// gone, a resize applied, a signal sent.
const faultTimeout = 20 * time.Second

// Kill implements faultyserver.Containers: it deletes the pod with grace
// period 0 and returns once the server's address refuses connections. The
// kubelet stops the container with its shortest grace period: SIGTERM,
// SIGKILL two seconds later. The instance stays down until Restart.
func (f *kubeFleet) Kill(ctx context.Context, id int) error {
	return f.withInstance(id, func(in *instance) error { return f.kill(ctx, in) })
}

func (f *kubeFleet) kill(ctx context.Context, in *instance) error {
	in.down.Store(true)
	if err := f.p.cs.delete(ctx, f.p.ns, "pods", in.name, zeroGrace); err != nil && !isNotFound(err) {
		return fmt.Errorf("kube backends: kill instance %d (delete pod %s/%s): %w", in.id, f.p.ns, in.name, err)
	}
	in.killed, in.paused, in.cpuLimited = true, false, false
	if f.p.opts.Service {
		// Its address is on the pod network, which this machine does not
		// dial: the pod's end is the API's word.
		if err := waitFor(ctx, faultTimeout, func() (bool, string) {
			_, err := f.p.cs.getPod(ctx, f.p.ns, in.name)
			return isNotFound(err), "the pod is still there"
		}); err != nil {
			return fmt.Errorf("kube backends: kill instance %d: pod %s: %w", in.id, in.name, err)
		}
		return nil
	}
	if err := waitRefused(ctx, f.Backend(in.id).URL.Host, faultTimeout); err != nil {
		return fmt.Errorf("kube backends: kill instance %d: pod %s deleted, but %w", in.id, in.name, err)
	}
	return nil
}

// waitRefused polls addr until a connection to it fails.
func waitRefused(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s still accepts connections after %v", addr, timeout)
			}
			return nil
		}
		c.Close()
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still accepts connections after %v", addr, timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Restart implements faultyserver.Containers: it creates the killed pod
// again, with the same name and (NetworkHost) the same port, and returns
// once it answers. In NetworkPod mode its address is the new pod's IP.
func (f *kubeFleet) Restart(ctx context.Context, id int) error {
	return f.withInstance(id, func(in *instance) error { return f.restart(ctx, in) })
}

func (f *kubeFleet) restart(ctx context.Context, in *instance) error {
	pod, err := f.p.podFor(f.spec, f.seq, in)
	if err != nil {
		return fmt.Errorf("kube backends: restart instance %d: %w", in.id, err)
	}
	if err := f.p.createPod(ctx, pod); err != nil {
		return fmt.Errorf("kube backends: restart instance %d: %w", in.id, err)
	}
	bs, err := f.p.waitReady(ctx, f.seq, []*instance{in})
	if err != nil {
		return fmt.Errorf("kube backends: restart instance %d: %w", in.id, err)
	}
	in.killed, in.signals = false, 0
	in.down.Store(false)
	f.Set(in.id, bs[0])
	return nil
}

// SetCPU implements faultyserver.Containers: the pods/resize subresource
// sets the container's CPU limit to cpus in place (no restart); cpus <= 0
// sets it back to liftedCPU. It returns once the kubelet reports the new
// limit in the pod's status.
func (f *kubeFleet) SetCPU(ctx context.Context, id int, cpus float64) error {
	return f.withInstance(id, func(in *instance) error { return f.setCPU(ctx, in, cpus) })
}

func (f *kubeFleet) setCPU(ctx context.Context, in *instance, cpus float64) error {
	c := faultContainer(f.spec)
	limit, err := f.p.resize(ctx, in.name, c, cpus)
	if err != nil {
		return fmt.Errorf("kube backends: cpu limit of instance %d: %w", in.id, err)
	}
	in.cpuLimited = cpus > 0
	if err := f.p.waitResized(ctx, in.name, c, limit); err != nil {
		return fmt.Errorf("kube backends: cpu limit of instance %d: %w", in.id, err)
	}
	return nil
}

// cpuLimit is the limit for cpus (<= 0: liftedCPU), in millicores.
func cpuLimit(cpus float64) resource.Quantity {
	if cpus <= 0 {
		return resource.MustParse(liftedCPU)
	}
	return *resource.NewMilliQuantity(max(1, int64(math.Round(cpus*1000))), resource.DecimalSI)
}

// resize asks for the CPU limit of pod's container to be cpus (see
// cpuLimit), lowering its request to the limit if it is above, and
// returns the limit.
func (p *Provider) resize(ctx context.Context, pod, container string, cpus float64) (resource.Quantity, error) {
	limit := cpuLimit(cpus)
	request := p.request
	if request.Cmp(limit) > 0 {
		request = limit
	}
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"requests":{"cpu":%q},"limits":{"cpu":%q}}}]}}`,
		container, request.String(), limit.String())
	err := p.cs.patch(ctx, p.ns, "pods", pod, "resize", types.StrategicMergePatchType, []byte(patch))
	if err != nil {
		return limit, fmt.Errorf("resize pod %s/%s to %s CPU: %w", p.ns, pod, limit.String(), err)
	}
	return limit, nil
}

// waitResized polls pod until its container's reported CPU limit is
// limit, or the kubelet says the resize cannot be done.
func (p *Provider) waitResized(ctx context.Context, name, container string, limit resource.Quantity) error {
	ctx, cancel := context.WithTimeout(ctx, faultTimeout)
	defer cancel()
	var last *corev1.Pod
	for {
		pod, err := p.cs.getPod(ctx, p.ns, name)
		if err == nil {
			last = pod
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
					return fmt.Errorf("pod %s/%s: resize to %s CPU infeasible: %s", p.ns, name, limit.String(), c.Message)
				}
			}
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name != container || cs.Resources == nil {
					continue
				}
				if got, ok := cs.Resources.Limits[corev1.ResourceCPU]; ok && got.Cmp(limit) == 0 {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s/%s: the kubelet did not apply a CPU limit of %s within %v%s", p.ns, name, limit.String(), faultTimeout, resizeState(last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// resizeState describes pod's resize conditions and reported resources.
func resizeState(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			fmt.Fprintf(&b, "; %s %s: %s %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Resources != nil {
			fmt.Fprintf(&b, "; container %s reports limits %v", cs.Name, cs.Resources.Limits)
		}
	}
	return b.String()
}

// Pause implements faultyserver.Containers: SIGSTOP to the server (or app)
// process,
// sent by an ephemeral container (see the package comment for how this
// differs from Docker's freezer pause).
func (f *kubeFleet) Pause(ctx context.Context, id int) error {
	return f.signalInstance(ctx, id, "STOP")
}

// Unpause implements faultyserver.Containers: SIGCONT, as Pause.
func (f *kubeFleet) Unpause(ctx context.Context, id int) error {
	return f.signalInstance(ctx, id, "CONT")
}

func (f *kubeFleet) signalInstance(ctx context.Context, id int, sig string) error {
	return f.withInstance(id, func(in *instance) error { return f.signal(ctx, in, sig) })
}

// errNoSharedPIDs is the error of pause on a pod without a shared process
// namespace.
var errNoSharedPIDs = errors.New("pause needs pods that share their process namespace, which lbchaos gives them when the experiment has a pause fault (Options.SharePIDs)")

// signal sends sig (STOP or CONT) to in's server through an ephemeral
// container running `lbchaos signal SIG`, and waits until it has exited.
func (f *kubeFleet) signal(ctx context.Context, in *instance, sig string) error {
	if !f.p.opts.SharePIDs {
		return fmt.Errorf("kube backends: instance %d: %w", in.id, errNoSharedPIDs)
	}
	in.signals++
	name := fmt.Sprintf("signal-%s-%d", strings.ToLower(sig), in.signals)
	if err := f.p.addSignaller(ctx, in.name, name, sig); err != nil {
		return fmt.Errorf("kube backends: instance %d: %w", in.id, err)
	}
	if err := f.p.waitSignaller(ctx, in.name, name); err != nil {
		return fmt.Errorf("kube backends: instance %d: SIG%s: %w", in.id, sig, err)
	}
	in.paused = sig == "STOP"
	return nil
}

// addSignaller adds to pod the ephemeral container name, which runs
// `lbchaos signal sig` from the backend image. Ephemeral containers cannot
// be removed: a pod keeps one per signal sent.
func (p *Provider) addSignaller(ctx context.Context, pod, name, sig string) error {
	ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name:            name,
		Image:           p.opts.Image,
		ImagePullPolicy: p.opts.PullPolicy,
		Command:         []string{"/lbchaos", "signal", sig},
	}}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := p.cs.getPod(ctx, p.ns, pod)
		if err != nil {
			return err
		}
		cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, ec)
		err = p.cs.update(ctx, p.ns, "pods", pod, "ephemeralcontainers", cur)
		return err
	})
	if err != nil {
		return fmt.Errorf("add ephemeral container %s to pod %s/%s: %w", name, p.ns, pod, err)
	}
	return nil
}

// waitSignaller polls pod until its ephemeral container name has exited,
// and fails unless it exited 0.
func (p *Provider) waitSignaller(ctx context.Context, pod, name string) error {
	ctx, cancel := context.WithTimeout(ctx, faultTimeout)
	defer cancel()
	for {
		cur, err := p.cs.getPod(ctx, p.ns, pod)
		if err == nil {
			for _, s := range cur.Status.EphemeralContainerStatuses {
				if s.Name != name {
					continue
				}
				if t := s.State.Terminated; t != nil {
					if t.ExitCode == 0 {
						return nil
					}
					return fmt.Errorf("ephemeral container %s exited with code %d (%s)%s", name, t.ExitCode, t.Reason, p.logTail(ctx, pod, name))
				}
				if w := s.State.Waiting; w != nil && slices.Contains(fatalReasons, w.Reason) {
					return fmt.Errorf("ephemeral container %s cannot start: %s: %s", name, w.Reason, w.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ephemeral container %s of pod %s/%s did not finish within %v%s", name, p.ns, pod, faultTimeout, p.diagnose(pod))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

package kube

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// podPort is the port the server listens on in NetworkPod mode.
const podPort = 8080

// serverContainer is the name of the backend pod's one container.
const serverContainer = "server"

// maxLogTail bounds the pod output quoted in an error.
const maxLogTail = 4 << 10

// podName is the name of instance id of fleet seq; a restarted instance
// keeps it.
func podName(seq, id int) string { return fmt.Sprintf("backend-%d-%d", seq, id) }

// Container names of a backend pod: the fake server's, or with
// instances.app the app's and its sidecar's.
const (
	appContainer     = "app"
	sidecarContainer = "sidecar"
)

// faultContainer is the container a pod's container faults act on: the
// server, or the app (not its sidecar).
func faultContainer(spec fleet.Spec) string {
	if spec.App != nil {
		return appContainer
	}
	return serverContainer
}

// podFor returns the pod of instance in of fleet seq: the fake server, or
// with spec.App the app and an lbchaos sidecar in front of it, on
// in.port (NetworkHost: of 127.0.0.1).
func (p *Provider) podFor(spec fleet.Spec, seq int, in *instance) (*corev1.Pod, error) {
	host := p.network == NetworkHost
	listen := ":" + strconv.Itoa(in.port)
	if host {
		listen = "127.0.0.1:" + strconv.Itoa(in.port)
	}
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: p.request},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(liftedCPU)},
	}
	resize := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	port := func(n int) []corev1.ContainerPort {
		return []corev1.ContainerPort{{Name: "http", ContainerPort: int32(n), Protocol: corev1.ProtocolTCP}}
	}
	var containers []corev1.Container
	cfg := spec.ServerConfig(max(in.id, 0))
	if in.id == faultyserver.Unidentified {
		// A Deployment's template: named later (deployment.go).
		cfg.ID, cfg.Seed = faultyserver.Unidentified, 0
	}
	if app := spec.App; app == nil {
		flags, err := faultyserver.FlagsOf(cfg, listen)
		if err != nil {
			return nil, err
		}
		containers = []corev1.Container{{
			Name:            serverContainer,
			Image:           p.opts.Image,
			ImagePullPolicy: p.opts.PullPolicy,
			Args:            flags.Args(), // after the image's entry point, lbchaos serve
			Env:             tokenEnv(),
			Ports:           port(in.port),
			Resources:       resources,
			ResizePolicy:    resize,
		}}
	} else {
		flags, err := faultyserver.SidecarFlagsOf(faultyserver.SidecarConfig{
			ID:         cfg.ID,
			Upstream:   "http://127.0.0.1:" + strconv.Itoa(in.appPort),
			HealthPath: app.Health,
			Seed:       cfg.Seed,
			Shutdown:   spec.Shutdown.Shutdown,
		}, listen)
		if err != nil {
			return nil, err
		}
		var env []corev1.EnvVar
		for _, k := range slices.Sorted(maps.Keys(app.Env)) {
			env = append(env, corev1.EnvVar{Name: k, Value: app.Env[k]})
		}
		if app.PortEnv != "" {
			env = append(env, corev1.EnvVar{Name: app.PortEnv, Value: strconv.Itoa(in.appPort)})
		}
		containers = []corev1.Container{{
			Name:            appContainer,
			Image:           app.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Args:            app.Args,
			Env:             env,
			Ports:           port(in.appPort),
			Resources:       resources,
			ResizePolicy:    resize,
		}, {
			Name:            sidecarContainer,
			Image:           p.opts.Image,
			ImagePullPolicy: p.opts.PullPolicy,
			Args:            flags.Args(),
			Env:             tokenEnv(),
			Ports:           []corev1.ContainerPort{{Name: "sidecar", ContainerPort: int32(in.port), Protocol: corev1.ProtocolTCP}},
			Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: p.request}},
		}}
	}
	no := false
	grace := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      in.name,
			Namespace: p.ns,
			Labels: map[string]string{
				LabelRun:      p.runID,
				labelFleet:    strconv.Itoa(seq),
				labelInstance: strconv.Itoa(in.id),
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			HostNetwork:                   host,
			DNSPolicy:                     corev1.DNSDefault, // the server resolves nothing
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			ShareProcessNamespace:         &p.opts.SharePIDs,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    containers,
		},
	}
	if p.opts.Service {
		p.servicePod(spec, pod, in.port)
	}
	return pod, nil
}

// portsPerInstance is how many ports of 127.0.0.1 an instance of spec
// takes in NetworkHost mode.
func portsPerInstance(spec fleet.Spec) int {
	if spec.App != nil {
		return 2
	}
	return 1
}

// assignPorts sets in's ports: NetworkHost, free ports of 127.0.0.1 taken
// from free (the app's too, which it takes from app.port_env); NetworkPod,
// podPort for the server or sidecar, and the app's own port (podPort+1
// with port_env, the sidecar moving to podPort+1 if the app's fixed port
// is podPort).
func (p *Provider) assignPorts(spec fleet.Spec, in *instance, free []int) error {
	if p.network == NetworkPod {
		in.port = podPort
		if app := spec.App; app != nil {
			in.appPort = app.Port
			if app.PortEnv != "" {
				in.appPort = podPort + 1
			} else if app.Port == podPort {
				in.port = podPort + 1
			}
		}
		return nil
	}
	if len(free) < portsPerInstance(spec) {
		return fmt.Errorf("instance %d: no free port on 127.0.0.1 left", in.id)
	}
	in.port = free[0]
	if spec.App != nil {
		in.appPort = free[1]
	}
	return nil
}

// createPod creates pod. In a namespace just created, the service account
// admission may refuse it until the controller manager has made the
// namespace's default service account: that is retried until ctx ends.
func (p *Provider) createPod(ctx context.Context, pod *corev1.Pod) error {
	for {
		err := p.cs.create(ctx, p.ns, "pods", pod, &corev1.Pod{})
		if err == nil {
			return nil
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "serviceaccount") {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Waiting reasons after which a pod never starts by itself.
var fatalReasons = []string{"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// fatalWaiting reports whether a container waiting for w will not start by
// itself: one of fatalReasons, except a configuration error that says the
// kubelet's cache of the pod's secrets or config maps is not synced yet
// ("failed to sync secret cache: timed out waiting for the condition", a
// busy node's answer for a secret created just before the pod), which the
// kubelet tries again.
func fatalWaiting(w *corev1.ContainerStateWaiting) bool {
	if w == nil || !slices.Contains(fatalReasons, w.Reason) {
		return false
	}
	return w.Reason != "CreateContainerConfigError" || !strings.Contains(w.Message, "failed to sync")
}

// podProblem returns why pod will not start, or "".
func podProblem(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("the pod is %s", pod.Status.Phase)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; fatalWaiting(w) {
			return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("container %s exited (code %d, %s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	return ""
}

// control is the control client of in at u: through the API server's
// port forwarding in Service mode, else at u.
func (p *Provider) control(in *instance, u *url.URL) *faultyserver.Client {
	if p.fwd != nil {
		return &faultyserver.Client{BaseURL: forwardURL(in.name, in.port), Token: p.opts.Token, HTTP: p.fwd.client(faultyserver.DefaultClientTimeout)}
	}
	return &faultyserver.Client{BaseURL: u.String(), Token: p.opts.Token}
}

// backendURL is the address of in's server in pod, or nil until it has one.
func (p *Provider) backendURL(in *instance, pod *corev1.Pod) *url.URL {
	if p.network == NetworkHost {
		return &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(in.port)}
	}
	if pod.Status.PodIP == "" {
		return nil
	}
	return &url.URL{Scheme: "http", Host: urlHost(pod.Status.PodIP, in.port)}
}

func urlHost(ip string, port int) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(port)
	}
	return ip + ":" + strconv.Itoa(port)
}

// waitReady waits until the pod of every instance of insts runs and its
// server answers its health check, and returns their backends in the order
// of insts. It lists the fleet's pods once per round, so a hundred pods
// cost one request to the API server, and gives up early when a pod cannot
// start (an image the node does not have).
func (p *Provider) waitReady(ctx context.Context, seq int, insts []*instance) ([]fleet.Backend, error) {
	timeout := p.opts.StartTimeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]fleet.Backend, len(insts))
	pending := map[string]int{} // pod name → index in insts
	for i, in := range insts {
		pending[in.name] = i
	}
	selector := labelFleet + "=" + strconv.Itoa(seq)
	var lastErr error
	for len(pending) > 0 {
		pods, err := p.cs.listPods(ctx, p.ns, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range pods.Items {
				pod := &pods.Items[i]
				idx, ok := pending[pod.Name]
				if !ok || pod.DeletionTimestamp != nil {
					continue
				}
				in := insts[idx]
				if why := podProblem(pod); why != "" {
					if strings.Contains(why, "Image") {
						why += " (the node must have the image: --kube-load, or make kube-load IMAGES=..., imports it into the local cluster; for another cluster push it where the nodes pull from)"
					}
					return nil, fmt.Errorf("instance %d (pod %s/%s) cannot start: %s%s", in.id, p.ns, pod.Name, why, p.diagnose(pod.Name))
				}
				u := p.backendURL(in, pod)
				if pod.Status.Phase != corev1.PodRunning || u == nil || p.opts.Service && !podReady(pod) {
					continue
				}
				wg.Go(func() {
					hctx, hcancel := context.WithTimeout(ctx, time.Second)
					defer hcancel()
					ctl := p.control(in, u)
					herr := ctl.Healthy(hctx)
					mu.Lock()
					defer mu.Unlock()
					if herr != nil {
						lastErr = herr
						return
					}
					out[idx] = fleet.Backend{ID: in.id, URL: u, Control: ctl}
				})
			}
			wg.Wait()
			for name, idx := range pending {
				if out[idx].URL != nil {
					delete(pending, name)
				}
			}
		} else {
			lastErr = err
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, p.notReady(pending, insts, timeout, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return out, nil
}

// notReady is the error of a fleet whose pods did not all answer in time:
// it names them and quotes the state, events and log of the first few.
func (p *Provider) notReady(pending map[string]int, insts []*instance, timeout time.Duration, lastErr error) error {
	names := make([]string, 0, len(pending))
	for name := range pending {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return pending[a] - pending[b] })
	msg := fmt.Sprintf("%d of %d pods in namespace %s did not answer their health check within %v", len(names), len(insts), p.ns, timeout)
	if lastErr != nil {
		msg += fmt.Sprintf(" (last error: %v)", lastErr)
	}
	const quoted = 3
	for i, name := range names {
		if i == quoted {
			msg += fmt.Sprintf("\n… and %d more", len(names)-quoted)
			break
		}
		msg += fmt.Sprintf("\ninstance %d (pod %s):%s", insts[pending[name]].id, name, p.diagnose(name))
	}
	return fmt.Errorf("%s\n(raise the start timeout, lower --kube-cpu-request if pods are Pending for CPU, or check that the node has image %s)", msg, p.opts.Image)
}

// diagnose describes pod name: its phase and conditions, its containers'
// states, its events and the end of its log, as lines to follow an error.
func (p *Provider) diagnose(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var b strings.Builder
	pod, err := p.cs.getPod(ctx, p.ns, name)
	if err != nil {
		return fmt.Sprintf("\n  (its state is unknown: %v)", err)
	}
	fmt.Fprintf(&b, "\n  phase %s", pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, "\n  container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			fmt.Fprintf(&b, "\n  container %s terminated: exit code %d %s %s", cs.Name, t.ExitCode, t.Reason, t.Message)
		case cs.State.Running != nil:
			fmt.Fprintf(&b, "\n  container %s running since %s", cs.Name, cs.State.Running.StartedAt.UTC().Format(time.RFC3339))
		}
	}
	var evs corev1.EventList
	err = p.cs.list(ctx, p.ns, "events", metav1.ListOptions{FieldSelector: "involvedObject.name=" + name}, &evs)
	if err == nil && len(evs.Items) > 0 {
		items := evs.Items
		if len(items) > 5 {
			items = items[len(items)-5:]
		}
		b.WriteString("\n  events:")
		for _, e := range items {
			fmt.Fprintf(&b, "\n    %s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message))
		}
	}
	for _, c := range pod.Spec.Containers {
		b.WriteString(p.logTail(ctx, name, c.Name))
	}
	return b.String()
}

// logTail returns the end of a container's log, formatted to follow an
// error, or "" when there is none to read.
func (p *Provider) logTail(ctx context.Context, pod, container string) string {
	lines := int64(40)
	rc, err := p.cs.logs(ctx, p.ns, pod, &corev1.PodLogOptions{Container: container, TailLines: &lines})
	if err != nil {
		return ""
	}
	defer rc.Close()
	data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "\n  (" + container + " wrote nothing)"
	}
	if len(s) > maxLogTail {
		s = "…" + s[len(s)-maxLogTail:]
	}
	return "\n  " + container + " output:\n" + s
}

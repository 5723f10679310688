package kube

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

// Service mode (Options.Service): the pods run on the pod network behind
// a Service of their own (ClusterIP, selecting the fleet's pods), each
// with the kubelet's readiness probe of instances.readiness and the
// shutdown of instances.shutdown. kube-proxy's rules on the node choose a
// ready pod per connection; the kube:service strategy sends to the
// Service from generator pods, and every other strategy sends to the pods'
// addresses from generator pods too: nothing of this machine's own
// network namespace sends load to a pod. The control API goes through
// the API server's port forwarding (forward.go).

// serviceName is the Service of fleet seq.
func serviceName(seq int) string { return "backends-" + strconv.Itoa(seq) }

// serviceLabel is the label kube's EndpointSlice controller sets on the
// slices of a Service.
const serviceLabel = "kubernetes.io/service-name"

// Services implements fleet.ServiceProvider.
func (p *Provider) Services() (bool, string) {
	if !p.opts.Service {
		return false, "the kube backends run without a Service (lbchaos run puts them behind one when a strategy is kube:service, instances.kube.service is set or instances.kube.workload is deployment)"
	}
	return true, ""
}

// ServiceURL implements fleet.InCluster: the Service's address, nil when
// the fleet is not behind one.
func (f *kubeFleet) ServiceURL() *url.URL { return f.service }

var _ fleet.InCluster = (*kubeFleet)(nil)

// servicePod adds to pod what service mode changes: the readiness probe,
// the shutdown's preStop sleep and grace period.
func (p *Provider) servicePod(spec fleet.Spec, pod *corev1.Pod, port int) {
	sd := spec.Shutdown
	grace := int64(sd.TerminationGrace / time.Second)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	c := &pod.Spec.Containers[0]
	if r := spec.Readiness; r != nil {
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: r.Path, Port: intstr.FromInt(port)}},
			PeriodSeconds:    int32(r.Period / time.Second),
			TimeoutSeconds:   int32(r.Timeout / time.Second),
			FailureThreshold: int32(r.FailureThreshold),
			SuccessThreshold: int32(r.SuccessThreshold),
		}
	}
	if sd.PreStopSleep > 0 {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Sleep: &corev1.SleepAction{Seconds: int64(sd.PreStopSleep / time.Second)},
		}}
	}
}

// expose creates the Service of fleet seq and waits until its
// EndpointSlices list n ready endpoints and, when Options.ServiceRules is
// set, until kube-proxy has written its rules.
func (p *Provider) expose(ctx context.Context, seq, n int) (*url.URL, error) {
	name := serviceName(seq)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelRun: p.runID, labelFleet: strconv.Itoa(seq)}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelRun: p.runID, labelFleet: strconv.Itoa(seq)},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP,
				Port: podPort, TargetPort: intstr.FromInt(podPort),
			}},
		},
	}
	var out corev1.Service
	if err := p.cs.create(ctx, p.ns, "services", svc, &out); err != nil {
		return nil, fmt.Errorf("create Service %s/%s: %w", p.ns, name, err)
	}
	if out.Spec.ClusterIP == "" || out.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil, fmt.Errorf("Service %s/%s got no ClusterIP", p.ns, name)
	}
	if err := p.waitEndpoints(ctx, name, n); err != nil {
		return nil, err
	}
	if check := p.opts.ServiceRules; check != nil {
		if err := waitFor(ctx, proxyRulesTimeout, func() (bool, string) { return check(p.ns, name) }); err != nil {
			return nil, fmt.Errorf("Service %s/%s: kube-proxy has not written its rules: %w (is kube-proxy running? make kube-up starts it)", p.ns, name, err)
		}
	}
	return &url.URL{Scheme: "http", Host: urlHost(out.Spec.ClusterIP, podPort)}, nil
}

// proxyRulesTimeout bounds the wait for kube-proxy's rules of a new
// Service: it syncs within a second of a change, unless it is not there.
const proxyRulesTimeout = 15 * time.Second

// readyEndpoints returns the ready endpoints of Service name's
// EndpointSlices, those kube-proxy routes to.
func (p *Provider) readyEndpoints(ctx context.Context, name string) ([]discoveryv1.Endpoint, error) {
	disc, err := p.discovery()
	if err != nil {
		return nil, err
	}
	var slices discoveryv1.EndpointSliceList
	if err := disc.list(ctx, p.ns, "endpointslices", metav1.ListOptions{LabelSelector: serviceLabel + "=" + name}, &slices); err != nil {
		return nil, err
	}
	var ready []discoveryv1.Endpoint
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				ready = append(ready, e)
			}
		}
	}
	return ready, nil
}

// waitEndpoints waits until Service name has n ready endpoints.
func (p *Provider) waitEndpoints(ctx context.Context, name string, n int) error {
	err := waitFor(ctx, p.opts.StartTimeout, func() (bool, string) {
		ready, err := p.readyEndpoints(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		return len(ready) == n, fmt.Sprintf("%d of %d endpoints ready", len(ready), n)
	})
	if err != nil {
		return fmt.Errorf("Service %s/%s: %w", p.ns, name, err)
	}
	return nil
}

// waitFor polls cond every 100 ms until it holds, ctx ends or timeout
// passes; the error quotes cond's last word.
func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not after %v: %s", timeout, why)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// podReady reports whether pod's Ready condition is true.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

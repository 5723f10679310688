package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
)

// TestClusterDeployment runs a fleet as a real Deployment: its pods,
// identical from one template, are each named an instance id before the
// readiness gate lets them into the Service; a rolling restart brings as
// many new pods, named in turn; Terminate leaves no Deployment,
// ReplicaSet or pod behind.
func TestClusterDeployment(t *testing.T) {
	p := newClusterProvider(t, Options{Service: true, ServiceRules: localcluster.ServiceRules})
	in := experiments.Instances{
		Count:     3,
		Workers:   4,
		Service:   faultyserver.Fixed(5 * time.Millisecond),
		Readiness: &experiments.Readiness{Path: "/healthz", Period: time.Second, Timeout: time.Second, FailureThreshold: 1, SuccessThreshold: 1},
		Shutdown:  experiments.Shutdown{TerminationGrace: 5 * time.Second},
		Kube: experiments.Kube{Workload: experiments.WorkloadDeployment, Service: true,
			Rollout: &experiments.Rollout{MaxSurge: "1", MaxUnavailable: "0"}},
	}
	in.Shutdown.Mode = "finish"
	fl, err := p.Start(t.Context(), fleet.Spec{Instances: in, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if got := len(fl.Backends()); got != 6 {
		t.Fatalf("%d instances, want 6: three pods and the three a rollout brings", got)
	}
	// The named ones answer as themselves; the rollout's are yet to come.
	named := func(ids ...int) {
		t.Helper()
		bs := fl.Backends()
		for _, id := range ids {
			b := bs[id]
			if b.URL == nil || b.Control == nil {
				t.Fatalf("instance %d has no pod", id)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			st, err := b.Control.Stats(ctx)
			cancel()
			if err != nil || st.ID != id {
				t.Errorf("instance %d: stats id %d (%v)", id, st.ID, err)
			}
		}
	}
	named(0, 1, 2)
	for _, b := range fl.Backends()[3:] {
		if b.URL != nil {
			t.Errorf("instance %d has an address before the rollout", b.ID)
		}
	}
	kf := fl.(*kubeFleet)
	pods, err := typed(t, p).CoreV1().Pods(p.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if !gateSet(&pod) || pod.Labels[labelInstance] == "" {
			t.Errorf("pod %s: gate %v, instance label %q", pod.Name, gateSet(&pod), pod.Labels[labelInstance])
		}
	}

	t0 := time.Now()
	done, err := fl.(fleet.Roller).Rollout(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the rollout did not complete in 2 minutes")
	}
	t.Logf("rollout of 3 pods complete in %v", time.Since(t0).Round(100*time.Millisecond))
	named(3, 4, 5)
	if eps, err := p.readyEndpoints(t.Context(), serviceName(kf.seq)); err != nil || len(eps) != 3 {
		t.Errorf("%d ready endpoints after the rollout (%v), want 3", len(eps), err)
	}
	if notes := kf.RolloutNotes(); len(notes) > 0 {
		t.Errorf("notes: %q", notes)
	}

	fl.Close()
	cs := typed(t, p)
	deps, err := cs.AppsV1().Deployments(p.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(deps.Items) > 0 {
		t.Errorf("Deployments left after Close: %d (%v)", len(deps.Items), err)
	}
	rss, err := cs.AppsV1().ReplicaSets(p.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(rss.Items) > 0 {
		t.Errorf("ReplicaSets left after Close: %d (%v)", len(rss.Items), err)
	}
	// Pods deleted at once may take a moment to go from the API.
	deadline := time.Now().Add(30 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods(p.ns).List(t.Context(), metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods left 30 s after Close: %d (%v)", len(pods.Items), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

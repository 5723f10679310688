package kube

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

// TestWatchReportsCrashes, against the envtest API server, writes the pod
// statuses a kubelet would: of four instances, a container that exits
// (instance 0) and a pod deleted by someone else (3) are crashes; a pod a
// scheduled kill deleted (1) and a container that had ended before the
// watch began (2) are not.
func TestWatchReportsCrashes(t *testing.T) {
	p := newEnvProvider(t, NetworkHost)
	spec := testSpec(t, 4)
	f := &kubeFleet{p: p, spec: spec, seq: 1}
	for id := range 4 {
		in := &instance{id: id, name: podName(1, id), port: 20000 + id}
		createPod(t, p, spec, in)
		f.insts = append(f.insts, in)
	}
	cs := typed(t, p).CoreV1().Pods(p.ns)
	exit := func(id int, code int32) {
		t.Helper()
		pod, err := cs.Get(t.Context(), podName(1, id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  serverContainer,
			Image: "lbchaos-backend:test",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: "Error", FinishedAt: metav1.Now(),
			}},
		}}
		if _, err := cs.UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(id int) {
		t.Helper()
		if err := cs.Delete(t.Context(), podName(1, id), zeroGrace); err != nil {
			t.Fatal(err)
		}
	}
	exit(2, 1) // before the watch: not reported

	var mu sync.Mutex
	var got []fleet.Crash
	stop, err := f.Watch(func(c fleet.Crash) {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	exit(0, 2)
	f.insts[1].down.Store(true) // as kill does before it deletes the pod
	del(1)
	del(3)

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(watchPeriod)
	}
	time.Sleep(4 * watchPeriod) // anything else would show by now
	stop()
	stop() // idempotent

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("reported %d crashes, want 2 (instances 0 and 3): %+v", len(got), got)
	}
	byID := map[int]fleet.Crash{}
	for _, c := range got {
		if !c.Fatal {
			t.Errorf("instance %d: not fatal", c.Instance)
		}
		byID[c.Instance] = c
	}
	if c, ok := byID[0]; !ok || c.Detail != "container server exited with code 2 (Error)" {
		t.Errorf("instance 0: %+v, want the server's exit with code 2", byID[0])
	} else if c.Log == nil {
		t.Error("instance 0: no Log")
	} else {
		// No kubelet here serves a container's log (TestClusterCrashIsReported
		// reads one): the fetch returns, with nothing or the reason.
		t.Logf("instance 0's log without a kubelet: %q", c.Log())
	}
	if c, ok := byID[3]; !ok || !strings.Contains(c.Detail, "pod "+p.ns+"/"+podName(1, 3)+" is gone") {
		t.Errorf("instance 3: %+v, want its pod gone", byID[3])
	}
}

package kube

// End-to-end tests against a running cluster with a kubelet: the local one
// of `make kube-up` (its kubeconfig, or $KUBECONFIG). They skip when no
// cluster answers, and fail then under CI=true.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/reports"
)

// clusterKubeconfig returns the kubeconfig of a running cluster.
func clusterKubeconfig(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("a real cluster")
	}
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		kc = filepath.Join(localcluster.DefaultStateDir, "admin.kubeconfig")
		if _, err := os.Stat(kc); err != nil {
			runtest.Need(t, fmt.Errorf("no cluster (make kube-up): %w", err))
		}
	}
	runtest.Need(t, Available(t.Context(), kc))
	return kc
}

var (
	imageOnce sync.Once
	imageRef  string
	imageErr  error
)

// clusterImage builds the backend image of this tree with Docker and, for
// the local cluster, imports it into the cluster's containerd.
func clusterImage(t *testing.T) string {
	t.Helper()
	runtest.Need(t, docker.Available(t.Context()))
	bin := runtest.Binary(t)
	imageOnce.Do(func() {
		imageRef, imageErr = docker.BuildImage(context.Background(), bin, testLog{t})
		if imageErr != nil {
			return
		}
		v := localcluster.DefaultVersion
		l := localcluster.Layout{Version: v, CacheDir: localcluster.DefaultCacheDir(v), StateDir: localcluster.DefaultStateDir}
		if _, err := os.Stat(l.RecordFile()); err == nil {
			imageErr = localcluster.Load(context.Background(), localcluster.Options{Layout: l, Images: []string{imageRef}, Log: testLog{t}})
		}
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageRef
}

// newClusterProvider returns a provider on the running cluster, closed at
// the end of the test and checked to leave no namespace behind.
func newClusterProvider(t *testing.T, opts Options) *Provider {
	t.Helper()
	opts.Kubeconfig = clusterKubeconfig(t)
	opts.Image = clusterImage(t)
	opts.PullPolicy = corev1.PullNever
	opts.Log = testLog{t}
	p, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("provider close: %v", err)
		}
		_, err := typed(t, p).CoreV1().Namespaces().Get(context.Background(), p.ns, metav1.GetOptions{})
		if !isNotFound(err) {
			t.Errorf("namespace %s still there after Close (%v)", p.ns, err)
		}
	})
	return p
}

// healthy reports whether b answers its health check within d.
func healthy(b fleet.Backend, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return b.Control.Healthy(ctx)
}

// TestClusterFaults: kill deletes the pod and restart brings the same pod
// back, answering; cpu changes the limit the kubelet reports; pause stops
// the server while the pod stays Running; a reused fleet is reset.
func TestClusterFaults(t *testing.T) {
	for _, network := range []Network{NetworkHost, NetworkPod} {
		t.Run(string(network), func(t *testing.T) { testClusterFaults(t, network) })
	}
}

func testClusterFaults(t *testing.T, network Network) {
	p := newClusterProvider(t, Options{SharePIDs: true, Reuse: true, Network: network})
	spec := testSpec(t, 3)
	fl, err := p.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*kubeFleet)
	c := faultyserver.Containers(f)
	pods := typed(t, p).CoreV1().Pods(p.ns)

	before := f.Backends()[0].URL.Host
	t0 := time.Now()
	if err := c.Kill(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("kill: %v", time.Since(t0))
	if err := healthy(f.Backends()[0], 300*time.Millisecond); err == nil {
		t.Error("killed instance 0 still answers")
	}
	t0 = time.Now()
	if err := c.Restart(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart: %v", time.Since(t0))
	after := f.Backends()[0].URL.Host
	if err := healthy(f.Backends()[0], time.Second); err != nil {
		t.Errorf("restarted instance 0: %v", err)
	}
	t.Logf("instance 0 at %s, after its restart at %s", before, after)
	if network == NetworkHost && after != before {
		t.Errorf("a restarted hostNetwork pod moved from %s to %s; it keeps its port", before, after)
	}
	if _, err := pods.Get(t.Context(), podName(f.seq, 0), metav1.GetOptions{}); err != nil {
		t.Errorf("restarted instance 0 has not kept its pod's name: %v", err)
	}

	limitOf := func(id int) string {
		pod, err := pods.Get(t.Context(), podName(f.seq, id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Resources != nil {
				q := cs.Resources.Limits[corev1.ResourceCPU]
				return q.String() + fmt.Sprintf(" (restarts %d)", cs.RestartCount)
			}
		}
		return "none"
	}
	t0 = time.Now()
	if err := c.SetCPU(t.Context(), 1, 0.05); err != nil {
		t.Fatal(err)
	}
	t.Logf("cpu 0.05: %v", time.Since(t0))
	if got := limitOf(1); got != "50m (restarts 0)" {
		t.Errorf("instance 1's limit after cpu 0.05: %s, want 50m, in place", got)
	}
	if err := healthy(f.Backends()[1], time.Second); err != nil {
		t.Errorf("throttled instance 1: %v", err)
	}

	t0 = time.Now()
	if err := c.Pause(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("pause: %v", time.Since(t0))
	if err := healthy(f.Backends()[2], 500*time.Millisecond); err == nil {
		t.Error("paused instance 2 still answers")
	}
	if pod, err := pods.Get(t.Context(), podName(f.seq, 2), metav1.GetOptions{}); err != nil || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("paused instance 2's pod: %v; want Running (SIGSTOP is no state the kubelet sees)", err)
	}
	t0 = time.Now()
	if err := c.Unpause(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("unpause: %v", time.Since(t0))
	if err := healthy(f.Backends()[2], time.Second); err != nil {
		t.Errorf("unpaused instance 2: %v", err)
	}

	// Leave faults on for the reset of a reused fleet to undo.
	if err := c.Kill(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t0 = time.Now()
	fl2, err := p.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer fl2.Close()
	t.Logf("reset: %v", time.Since(t0))
	for _, b := range fl2.Backends() {
		if err := healthy(b, time.Second); err != nil {
			t.Errorf("instance %d after reset: %v", b.ID, err)
		}
	}
	if got := limitOf(1); got != liftedCPU+" (restarts 0)" {
		t.Errorf("instance 1's limit after reset: %s, want %s", got, liftedCPU)
	}
}

// TestClusterFastFail: a short fast-fail on ten pods shows its shape —
// round robin sends the failing instance a tenth, least-inflight makes it
// a black hole, ejection cuts the errors — and a kill with until brings
// the instance back, the balancer following it.
func TestClusterFastFail(t *testing.T) {
	p := newClusterProvider(t, Options{Reuse: true})
	e := live.New(live.Options{Provider: p})
	run := func(exp string) *reports.Summary {
		x := runtest.MustExperiment(t, "kube-e2e", exp)
		sum, err := harness.Run(t.Context(), x, harness.Options{Engine: e, Log: testLog{t}})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Backends != "kube" {
			t.Errorf("backends %q, want kube", sum.Backends)
		}
		return sum
	}
	const fastFail = `
duration: 3s
rate: 1000
timeout: 2s
instances: {count: 10, workers: 8, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - round-robin
  - least-inflight
  - least-inflight+eject(consecutive=5,duration=5s)
`
	sum := run(fastFail)
	if saturated(sum) {
		t.Log("the harness saturated (the machine is busy): the fast-fail part once more")
		sum = run(fastFail)
	}
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		t.Logf("%s: requests %d, error ratio %.4f, faulty share %.4f, p99 %.1f ms", st.Name, st.Requests, st.ErrorRatio, st.FaultyShare, st.LatencyMs.P99)
	}
	rr := runtest.StrategyByName(t, sum, "round-robin")
	li := runtest.StrategyByName(t, sum, "least-inflight")
	ej := runtest.StrategyByName(t, sum, "least-inflight+eject(consecutive=5,duration=5s)")
	if rr.ErrorRatio < 0.07 || rr.ErrorRatio > 0.13 {
		t.Errorf("round-robin: error ratio %.4f, want about a tenth", rr.ErrorRatio)
	}
	// A busy machine slows the healthy instances less than it keeps the
	// failing one's answers quick: the black hole shrinks, but stays. A
	// saturated harness queues every request in the generator, where
	// least-inflight sees the queue, not the instances: its numbers then
	// describe this machine, as the report says.
	if saturated(sum) {
		t.Logf("least-inflight: error ratio %.4f against round robin's %.4f, not compared: the harness saturated twice", li.ErrorRatio, rr.ErrorRatio)
	} else if li.ErrorRatio < 1.3*rr.ErrorRatio {
		t.Errorf("least-inflight: error ratio %.4f, want well above round robin's %.4f", li.ErrorRatio, rr.ErrorRatio)
	}
	if ej.ErrorRatio > 0.02 {
		t.Errorf("%s: error ratio %.4f, want near 0", ej.Name, ej.ErrorRatio)
	}

	sum = run(`
duration: 4s
rate: 500
timeout: 2s
instances: {count: 3, workers: 8, service: {dist: fixed, value: 5ms}}
faults:
  - {instance: 0, at: 1s, until: 2s, fault: {mode: kill}}
strategies: [round-robin]
`)
	st := sum.Strategies[0]
	runtest.CheckAccounting(t, st)
	in := st.Instances[0]
	t.Logf("kill 1s–2s: instance 0 %d requests, %d errors; overall error ratio %.4f", in.Requests, in.Errors, st.ErrorRatio)
	ts := st.Timeline.Instances[0]
	t.Logf("instance 0 per %.1f s: requests %v, errors %v", st.Timeline.BucketS, ts.Requests, ts.Errors)
	if in.Errors == 0 {
		t.Error("the killed instance had no errors")
	}
	// A third of 500 requests per second: about 170 in its first second,
	// and most of 340 in the two after its restart.
	if served := in.Requests - in.Errors; served < 250 {
		t.Errorf("instance 0 served %d requests; want it back after until", served)
	}
}

// TestClusterCrashIsReported: the server process of a pod killed from
// outside (as the kernel's OOM killer would) is reported by Watch, with
// its exit code and the server's last lines; a scheduled kill is not.
func TestClusterCrashIsReported(t *testing.T) {
	p := newClusterProvider(t, Options{Network: NetworkHost})
	fl, err := p.Start(t.Context(), testSpec(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*kubeFleet)
	crashes := make(chan fleet.Crash, 4)
	stop, err := f.Watch(func(c fleet.Crash) { crashes <- c })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := faultyserver.Containers(f).Kill(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(f.insts[0].port)
	pid := serverPID(t, listen)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill pid %d: %v", pid, err)
	}
	select {
	case c := <-crashes:
		t.Logf("reported %v after the kill: %s", time.Since(killed).Round(time.Millisecond), c.Detail)
		if c.Instance != 0 || !c.Fatal || !strings.HasPrefix(c.Detail, "container server exited with code 137") {
			t.Errorf("crash %+v, want instance 0's server exiting with code 137", c)
		}
		if lines := c.Log(); len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), "listening on "+listen) {
			t.Errorf("log %q, want the server's start line", lines)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no crash reported 30 s after the server was killed")
	}
	time.Sleep(4 * watchPeriod)
	stop()
	select {
	case c := <-crashes:
		t.Errorf("also reported %+v; the scheduled kill of instance 1 is no crash", c)
	default:
	}
}

// saturated reports whether the harness saturated during any strategy of
// sum.
func saturated(sum *reports.Summary) bool {
	for _, st := range sum.Strategies {
		if st.Harness != nil && st.Harness.Saturated {
			return true
		}
	}
	return false
}

// serverPID finds the host pid of the lbchaos serve process listening on
// listen (host:port), which a hostNetwork pod runs on this machine.
func serverPID(t *testing.T, listen string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "lbchaos" && args[1] == "serve" && slices.Contains(args, listen) {
			return pid
		}
	}
	t.Fatalf("no lbchaos serve process listening on %s", listen)
	return 0
}

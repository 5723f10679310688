package kube

import (
	"bytes"
	"context"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/reports"
)

// TestGeneratorJobAccepted: the real API server takes the generators'
// Indexed Job and ConfigMap; without a Job controller (envtest runs none)
// no pod comes, and each generator's stream says so by its deadline;
// cancelling the launch removes the Job and the ConfigMap.
func TestGeneratorJobAccepted(t *testing.T) {
	for _, network := range []Network{NetworkHost, NetworkPod} {
		t.Run(string(network), func(t *testing.T) {
			p := newEnvProvider(t, network)
			l := p.Launcher(time.Millisecond).(*jobLauncher)
			l.readyTimeout = 500 * time.Millisecond
			ctx, cancel := context.WithCancel(t.Context())
			gens, err := l.Launch(ctx, engine.LaunchSpec{
				N: 3, Args: []string{"--strategy", "round-robin"}, Experiment: []byte("name: x\n"),
				Grace: 2 * time.Second, Log: testLog{t},
			})
			if err != nil {
				t.Fatal(err)
			}
			cs := typed(t, p)
			job, err := cs.BatchV1().Jobs(p.ns).Get(t.Context(), "lbchaos-gen-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *job.Spec.Completions; got != 3 || *job.Spec.Parallelism != 3 || *job.Spec.CompletionMode != "Indexed" {
				t.Errorf("job: completions %d, parallelism %d, mode %s; want 3, 3, Indexed", got, *job.Spec.Parallelism, *job.Spec.CompletionMode)
			}
			pod := job.Spec.Template.Spec
			if pod.HostNetwork != (network == NetworkHost) {
				t.Errorf("hostNetwork %v with network %s", pod.HostNetwork, network)
			}
			if args := strings.Join(pod.Containers[0].Args, " "); !strings.HasPrefix(args, "generate --generator $(JOB_COMPLETION_INDEX) --experiment /etc/lbchaos/experiment.yaml --strategy round-robin") {
				t.Errorf("args %q", args)
			}
			cm, err := cs.CoreV1().ConfigMaps(p.ns).Get(t.Context(), "lbchaos-gen-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(cm.BinaryData[experimentFile]); got != "name: x\n" {
				t.Errorf("ConfigMap holds %q", got)
			}
			_, rerr := io.Copy(io.Discard, gens[1].Stream())
			if rerr == nil || !strings.Contains(rerr.Error(), "created no pod of index 1") {
				t.Errorf("stream of a generator without a pod: %v", rerr)
			}
			if err := gens[1].Wait(rerr); err == nil || !strings.HasPrefix(err.Error(), "generator 1: its results: ") {
				t.Errorf("wait: %v", err)
			}
			cancel()
			waitGone(t, func() bool {
				_, jerr := cs.BatchV1().Jobs(p.ns).Get(context.Background(), "lbchaos-gen-1", metav1.GetOptions{})
				_, cerr := cs.CoreV1().ConfigMaps(p.ns).Get(context.Background(), "lbchaos-gen-1", metav1.GetOptions{})
				return isNotFound(jerr) && isNotFound(cerr)
			})
		})
	}
}

// waitGone waits up to 10 s for gone to hold.
func waitGone(t *testing.T, gone func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !gone(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the generators' Job or ConfigMap is still there after the launch's context ended")
		}
	}
}

// TestSplitStream: a pod's log holds the stream lines and the generator's
// progress; the stream gets the first, the run's log the others.
func TestSplitStream(t *testing.T) {
	log := "starting\n" + engine.StreamPrefix + "AAAA\nprogress 1s\n" + engine.StreamPrefix + "BBBB\n" + strings.Repeat("x", 100<<10) + "\nlast words"
	var out bytes.Buffer
	pl := engine.NewGeneratorLog(&out, 0)
	ended := make(chan struct{})
	got, err := io.ReadAll(splitStream(io.NopCloser(strings.NewReader(log)), pl, func() { close(ended) }))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("done not called at the log's end")
	}
	if want := engine.StreamPrefix + "AAAA\n" + engine.StreamPrefix + "BBBB\n"; string(got) != want {
		t.Errorf("stream %q, want %q", got, want)
	}
	const p = "      generator 0: "
	if !strings.HasPrefix(out.String(), p+"starting\n"+p+"progress 1s\n"+p+"xxx") || pl.Last() != "last words" {
		t.Errorf("log %.60q…, last %q", out.String(), pl.Last())
	}
}

// TestClusterGenerators: on the local cluster, two generators as the pods
// of an Indexed Job measure what one in-process generator measures (the
// same schedule; round robin's tenth on the failing instance), and leave
// no Job, ConfigMap or pod behind.
func TestClusterGenerators(t *testing.T) {
	p := newClusterProvider(t, Options{Reuse: true})
	const exp = `
duration: 3s
rate: 600
timeout: 2s
instances: {count: 10, workers: 8, service: {dist: fixed, value: 10ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies: [round-robin]
`
	measure := func(gens string, opts live.Options) reports.Strategy {
		x := runtest.MustExperiment(t, "kube-generators", exp+gens)
		sum, err := harness.Run(t.Context(), x, harness.Options{Engine: live.New(opts), Log: testLog{t}})
		if err != nil {
			t.Fatal(err)
		}
		st := sum.Strategies[0]
		runtest.CheckAccounting(t, st)
		t.Logf("%s: requests %d, error ratio %.4f, p50 %.2f ms, send lag p99 %.1f ms, generators %d",
			gens, st.Requests, st.ErrorRatio, st.LatencyMs.P50, st.SendLagMs.P99, sum.Generators)
		return st
	}
	one := measure("generators: 1", live.Options{Provider: p})
	two := measure("generators: 2", live.Options{Provider: p, Launcher: p.Launcher(3 * time.Second)})
	// The same arrival schedule: the same requests, to the one request.
	if one.Requests != two.Requests {
		t.Errorf("requests: one generator %d, two %d", one.Requests, two.Requests)
	}
	// Round robin sends instance 0 every tenth request of each balancer,
	// so a tenth of all fail whatever the split: within two requests of
	// each balancer's rounding.
	if d := math.Abs(one.ErrorRatio - two.ErrorRatio); d > 0.005 || two.ErrorRatio < 0.095 || two.ErrorRatio > 0.105 {
		t.Errorf("error ratio: one generator %.4f, two %.4f; want both about 0.1", one.ErrorRatio, two.ErrorRatio)
	}
	cs := typed(t, p)
	waitGone(t, func() bool {
		jobs, jerr := cs.BatchV1().Jobs(p.ns).List(context.Background(), metav1.ListOptions{})
		cms, cerr := cs.CoreV1().ConfigMaps(p.ns).List(context.Background(), metav1.ListOptions{LabelSelector: labelGenerators})
		return jerr == nil && cerr == nil && len(jobs.Items) == 0 && len(cms.Items) == 0
	})
}

package kube

// Tests against a real kube-apiserver and etcd (controller-runtime's
// envtest), without a kubelet: what the API server decides — validation of
// the pods lbchaos creates, the resize and ephemeral-container
// subresources, namespaces and their labels, the sweeps — is decided by
// the real thing. There is no namespace controller either: a deleted
// namespace stays Terminating, so the tests look for its deletion mark.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/owner"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
)

var (
	envOnce sync.Once
	env     *envtest.Environment
	envCfg  *rest.Config
	envErr  error
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger, which complains
	// with a stack trace unless one is set.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "envtest stop:", err)
		}
	}
	os.Exit(code)
}

// envtestBinaries returns kube-apiserver and etcd: from $KUBEBUILDER_ASSETS,
// else from the local cluster's build cache (make kube-up builds them).
func envtestBinaries() (apiserver, etcd string, err error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		apiserver, etcd = filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd")
	} else {
		l := localcluster.Layout{Version: localcluster.DefaultVersion, CacheDir: localcluster.DefaultCacheDir(localcluster.DefaultVersion)}
		apiserver, etcd = l.Bin("kube-apiserver"), l.EtcdBin()
	}
	for _, p := range []string{apiserver, etcd} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("envtest needs kube-apiserver and etcd (set KUBEBUILDER_ASSETS, or run make kube-up once to build them): %w", err)
		}
	}
	return apiserver, etcd, nil
}

// apiServer returns the shared envtest API server's admin config, starting
// it on first use; it skips the test (fails it under CI=true) when the
// binaries are missing.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	apiserver, etcd, err := envtestBinaries()
	runtest.Need(t, err)
	envOnce.Do(func() {
		e := &envtest.Environment{
			ControlPlane: envtest.ControlPlane{
				APIServer: &envtest.APIServer{Path: apiserver},
				Etcd:      &envtest.Etcd{Path: etcd},
			},
		}
		envCfg, envErr = e.Start()
		if envErr == nil {
			env = e
		}
	})
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
	return envCfg
}

// typed is a clientset of p's cluster, for the tests' own look.
func typed(t *testing.T, p *Provider) kubernetes.Interface {
	t.Helper()
	return clientset(t, p.cfg)
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// testLog writes each line to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newEnvProvider returns a provider on the envtest API server, closed at
// the end of the test.
func newEnvProvider(t *testing.T, network Network) *Provider {
	t.Helper()
	cfg := apiServer(t)
	p, err := New(t.Context(), Options{
		Config:        cfg,
		Image:         "lbchaos-backend:test",
		PullPolicy:    corev1.PullNever,
		Network:       network,
		SharePIDs:     true,
		DeleteTimeout: -1, // no namespace controller here
		Log:           testLog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("provider close: %v", err)
		}
	})
	return p
}

// testSpec is a fleet of n instances of 8 workers serving in 10 ms.
func testSpec(t *testing.T, n int) fleet.Spec {
	t.Helper()
	exp := runtest.MustExperiment(t, "spec", fmt.Sprintf(`
duration: 1s
rate: 100
instances: {count: %d, workers: 8, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`, n))
	return fleet.Spec{Instances: exp.Instances, Seed: exp.Seed}
}

// createPod creates in's pod and returns it as the API server has it.
func createPod(t *testing.T, p *Provider, spec fleet.Spec, in *instance) *corev1.Pod {
	t.Helper()
	pod, err := p.podFor(spec, 1, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.createPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	got, err := typed(t, p).CoreV1().Pods(p.ns).Get(t.Context(), in.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// deleted reports whether namespace ns is gone or being deleted.
func deleted(t *testing.T, cs kubernetes.Interface, ns string) bool {
	t.Helper()
	n, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if isNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return n.DeletionTimestamp != nil
}

// TestNamespaceOfRun: New creates the run's namespace with its run and
// owner labels; Close deletes it.
func TestNamespaceOfRun(t *testing.T) {
	cfg := apiServer(t)
	cs := clientset(t, cfg)
	p, err := New(t.Context(), Options{Config: cfg, Image: "img:1", RunID: "0123abcd", DeleteTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "kube" || p.Namespace() != "lbchaos-0123abcd" || p.Network() != NetworkHost {
		t.Errorf("name %q, namespace %q, network %q", p.Name(), p.Namespace(), p.Network())
	}
	ns, err := cs.CoreV1().Namespaces().Get(t.Context(), p.Namespace(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	self, err := owner.Self()
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[LabelRun] != "0123abcd" || ns.Annotations[AnnotationOwner] != self || ns.Labels[LabelOwner] != strings.ReplaceAll(self, "/", "_") {
		t.Errorf("labels %v, annotations %v; want run 0123abcd and owner %s", ns.Labels, ns.Annotations, self)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !deleted(t, cs, p.Namespace()) {
		t.Error("namespace not deleted by Close")
	}
	if err := p.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := p.Start(t.Context(), testSpec(t, 1)); err == nil {
		t.Error("Start after Close: no error")
	}
}

// deadOwner returns the owner string of a process of this host that has
// exited.
func deadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	return owner.Format(host, cmd.Process.Pid, "1")
}

// TestSweep: a run's start deletes the namespaces of owners of this host
// that are gone, and nothing else; clean (SweepAll, through a kubeconfig
// file) deletes every lbchaos namespace and only those.
func TestSweep(t *testing.T) {
	cfg := apiServer(t)
	cs := clientset(t, cfg)
	self, err := owner.Self()
	if err != nil {
		t.Fatal(err)
	}
	create := func(name, run, who string) {
		ns := namespaceFor(run, who)
		if run == "" {
			ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"other": "x"}}}
		}
		ns.Name = name
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("lbchaos-dead", "dead", deadOwner(t))
	create("lbchaos-live", "live", self)
	create("lbchaos-remote", "remote", "elsewhere/1/1")
	create("not-ours", "", "")
	// A pod in the dead run's namespace goes with it.
	pa, err := newAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{opts: Options{Image: "img:1", PullPolicy: corev1.PullNever}, cs: pa, network: NetworkPod, request: resource.MustParse("10m"), runID: "dead", ns: "lbchaos-dead"}
	pod, err := p.podFor(testSpec(t, 1), 1, &instance{id: 0, name: podName(1, 0), port: podPort})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.createPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}

	a, err := newAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := sweep(t.Context(), a, testLog{t}, staleOnly)
	if err != nil || n != 1 {
		t.Errorf("stale sweep: %d deleted, %v; want 1", n, err)
	}
	for ns, want := range map[string]bool{"lbchaos-dead": true, "lbchaos-live": false, "lbchaos-remote": false, "not-ours": false} {
		if got := deleted(t, cs, ns); got != want {
			t.Errorf("after the stale sweep, namespace %s deleted: %v, want %v", ns, got, want)
		}
	}
	pods, err := cs.CoreV1().Pods("lbchaos-dead").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods of the dead run's namespace: %d, %v; want none", len(pods.Items), err)
	}

	user, err := env.AddUser(envtest.User{Name: "cleaner", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err = SweepAll(t.Context(), path, io.Discard)
	if err != nil || n < 2 {
		t.Errorf("SweepAll: %d deleted, %v; want the live and remote runs' at least", n, err)
	}
	for ns, want := range map[string]bool{"lbchaos-live": true, "lbchaos-remote": true, "not-ours": false} {
		if got := deleted(t, cs, ns); got != want {
			t.Errorf("after SweepAll, namespace %s deleted: %v, want %v", ns, got, want)
		}
	}
}

// TestPodsAccepted: the API server accepts the backend pods of both
// network modes, defaults them as expected (Burstable, the host port of a
// hostNetwork pod), and accepts the requests the faults make: an in-place
// CPU resize (and its undoing) and an ephemeral container.
func TestPodsAccepted(t *testing.T) {
	for _, network := range []Network{NetworkHost, NetworkPod} {
		t.Run(string(network), func(t *testing.T) {
			p := newEnvProvider(t, network)
			spec := testSpec(t, 2)
			in := &instance{id: 1, name: podName(1, 1), port: 31234}
			if network == NetworkPod {
				in.port = podPort
			}
			got := createPod(t, p, spec, in)
			if got.Status.QOSClass != corev1.PodQOSBurstable {
				t.Errorf("QoS class %s, want Burstable (a resize keeps it)", got.Status.QOSClass)
			}
			c := got.Spec.Containers[0]
			wantPort := int32(podPort)
			if network == NetworkHost {
				wantPort = 31234
				if c.Ports[0].HostPort != wantPort {
					t.Errorf("host port %d, want %d", c.Ports[0].HostPort, wantPort)
				}
				if !strings.Contains(strings.Join(c.Args, " "), "127.0.0.1:31234") {
					t.Errorf("args %q do not listen on 127.0.0.1:31234", c.Args)
				}
			}
			if c.Ports[0].ContainerPort != wantPort || !*got.Spec.ShareProcessNamespace || got.Spec.HostNetwork != (network == NetworkHost) {
				t.Errorf("pod spec: port %d, shareProcessNamespace %v, hostNetwork %v", c.Ports[0].ContainerPort, *got.Spec.ShareProcessNamespace, got.Spec.HostNetwork)
			}

			for _, cpus := range []float64{0.005, 0.5, 0} {
				limit, err := p.resize(t.Context(), in.name, serverContainer, cpus)
				if err != nil {
					t.Fatalf("resize to %v: %v", cpus, err)
				}
				got, err := typed(t, p).CoreV1().Pods(p.ns).Get(t.Context(), in.name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				res := got.Spec.Containers[0].Resources
				lim, req := res.Limits[corev1.ResourceCPU], res.Requests[corev1.ResourceCPU]
				wantReq := resource.MustParse("10m")
				if cpus == 0.005 {
					wantReq = resource.MustParse("5m") // a request may not exceed the limit
				}
				if lim.Cmp(limit) != 0 || req.Cmp(wantReq) != 0 {
					t.Errorf("after resize to %v: limit %s request %s, want %s and %s", cpus, lim.String(), req.String(), limit.String(), wantReq.String())
				}
			}

			if err := p.addSignaller(t.Context(), in.name, "signal-stop-1", "STOP"); err != nil {
				t.Fatal(err)
			}
			if err := p.addSignaller(t.Context(), in.name, "signal-cont-2", "CONT"); err != nil {
				t.Fatal(err)
			}
			got, err := typed(t, p).CoreV1().Pods(p.ns).Get(t.Context(), in.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(got.Spec.EphemeralContainers); n != 2 || strings.Join(got.Spec.EphemeralContainers[1].Command, " ") != "/lbchaos signal CONT" {
				t.Errorf("ephemeral containers: %+v", got.Spec.EphemeralContainers)
			}
		})
	}
}

// TestStartFailsClearly: with no kubelet the pods stay Pending; Start
// gives up after its timeout with an error naming the pods and their
// state, and deletes them.
func TestStartFailsClearly(t *testing.T) {
	cfg := apiServer(t)
	p, err := New(t.Context(), Options{Config: cfg, Image: "img:1", StartTimeout: 500 * time.Millisecond, DeleteTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	_, err = p.Start(t.Context(), testSpec(t, 4))
	if err == nil {
		t.Fatal("Start without a kubelet: no error")
	}
	for _, want := range []string{"4 of 4 pods", "did not answer", "phase Pending", "and 1 more", "img:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	pods, lerr := typed(t, p).CoreV1().Pods(p.ns).List(t.Context(), metav1.ListOptions{})
	if lerr != nil || len(pods.Items) != 0 {
		t.Errorf("%d pods left after a failed Start (%v)", len(pods.Items), lerr)
	}
	if errors.Is(err, ErrNoCluster) {
		t.Error("a start timeout is not ErrNoCluster")
	}
}

// appSpec is a fleet of n instances of image behind sidecars; extra is
// added to instances.app.
func appSpec(t *testing.T, n int, image, extra string) fleet.Spec {
	t.Helper()
	exp := runtest.MustExperiment(t, "app", fmt.Sprintf(`
duration: 1s
rate: 100
instances:
  count: %d
  app: {image: %q, port: 8080, health: /healthz, args: [--workers, "8"], env: {B: "2", A: "1"}%s}
strategies: [round-robin]
`, n, image, extra))
	return fleet.Spec{Instances: exp.Instances, Seed: exp.Seed}
}

// TestAppPodsAccepted: a pod of the user's image and its sidecar, in both
// network modes; hostNetwork needs port_env.
func TestAppPodsAccepted(t *testing.T) {
	for _, tc := range []struct {
		network          Network
		extra            string
		sidecar, appPort int32
		env              string
	}{
		{NetworkPod, "", podPort + 1, 8080, "A=1 B=2"},
		{NetworkPod, ", port_env: PORT", podPort, podPort + 1, "A=1 B=2 PORT=8081"},
		{NetworkHost, ", port_env: PORT", 0, 0, ""}, // free ports
	} {
		t.Run(string(tc.network)+tc.extra, func(t *testing.T) {
			p := newEnvProvider(t, tc.network)
			spec := appSpec(t, 1, "example:1", tc.extra)
			if err := p.CheckApp(spec.App); err != nil {
				t.Fatal(err)
			}
			in := &instance{id: 0, name: podName(1, 0)}
			free, err := fleet.FreeLoopbackPorts(portsPerInstance(spec))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.assignPorts(spec, in, free); err != nil {
				t.Fatal(err)
			}
			got := createPod(t, p, spec, in)
			app, side := got.Spec.Containers[0], got.Spec.Containers[1]
			if app.Name != appContainer || app.Image != "example:1" || side.Name != sidecarContainer || side.Image != "lbchaos-backend:test" {
				t.Fatalf("containers %s (%s), %s (%s)", app.Name, app.Image, side.Name, side.Image)
			}
			if tc.sidecar != 0 && (side.Ports[0].ContainerPort != tc.sidecar || app.Ports[0].ContainerPort != tc.appPort) {
				t.Errorf("sidecar port %d, app port %d; want %d and %d", side.Ports[0].ContainerPort, app.Ports[0].ContainerPort, tc.sidecar, tc.appPort)
			}
			var env []string
			for _, e := range app.Env {
				env = append(env, e.Name+"="+e.Value)
			}
			if tc.env != "" && strings.Join(env, " ") != tc.env {
				t.Errorf("app env %v, want %s", env, tc.env)
			}
			if args := strings.Join(side.Args, " "); !strings.Contains(args, fmt.Sprintf("--upstream http://127.0.0.1:%d", in.appPort)) {
				t.Errorf("sidecar args %q do not forward to the app's port %d", args, in.appPort)
			}
			if _, err := p.resize(t.Context(), in.name, faultContainer(spec), 0.1); err != nil {
				t.Errorf("resize of the app's container: %v", err)
			}
		})
	}
	p := newEnvProvider(t, NetworkHost)
	if err := p.CheckApp(appSpec(t, 2, "example:1", "").App); err == nil || !strings.Contains(err.Error(), "port_env") {
		t.Errorf("a fixed-port app on hostNetwork pods: %v; want an error naming port_env", err)
	}
}

package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Options of Up and Down.
type Options struct {
	Layout
	Ports  Ports
	GoBin  string   // the go command that builds the components
	Images []string // Docker images to import besides the sandbox image
	// ProxyMode is kube-proxy's mode (DefaultProxyMode when empty).
	ProxyMode string
	Log       io.Writer // progress; stdout stays free for the KUBECONFIG line
}

// Timeouts of the waits in Up.
const (
	socketTimeout = 30 * time.Second
	readyTimeout  = 120 * time.Second
)

// Up starts the cluster and returns the admin kubeconfig's path once the
// apiserver answers /readyz, the node "localhost" is Ready and the default
// namespace has its service account. On failure it prints the end of the
// failing component's log, stops everything and restores the host (Down)
// before it returns the error.
func Up(ctx context.Context, o Options) (string, error) {
	logf := func(f string, a ...any) { fmt.Fprintf(o.Log, f+"\n", a...) }
	if os.Geteuid() != 0 {
		return "", errors.New("kube-up runs a kubelet and a containerd: it needs root")
	}
	if o.ProxyMode == "" {
		o.ProxyMode = DefaultProxyMode
	}
	if err := CheckProxyMode(o.ProxyMode); err != nil {
		return "", err
	}
	if rec, err := loadRecord(o.RecordFile()); err != nil || rec != nil {
		if rec != nil && healthy(ctx, o.Layout, o.Ports) {
			logf("kube-up: already up (state in %s)", o.StateDir)
			return o.Kubeconfig("admin"), nil
		}
		return "", fmt.Errorf("a cluster record is in %s but the cluster does not answer: run make kube-down first", o.RecordFile())
	}
	if pids := MatchProcs(o.exes(), o.marks()); len(pids) > 0 {
		return "", fmt.Errorf("processes of a local cluster run without a record (pids %v): run make kube-down first", pids)
	}
	if cg := kubepodsCgroups(); len(cg) > 0 {
		return "", fmt.Errorf("kubepods cgroups exist (%s): another kubelet runs or ran here", strings.Join(cg, ", "))
	}
	for _, ref := range o.Images {
		if exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() != nil {
			return "", fmt.Errorf("image %s: Docker does not have it (build or tag it first; nothing is pulled)", ref)
		}
	}
	for _, p := range o.Ports.list() {
		if !portFree(p) {
			return "", fmt.Errorf("127.0.0.1:%d is in use", p)
		}
	}

	// Cached: binaries, packages, the sandbox image.
	t0 := time.Now()
	if err := BuildComponents(ctx, o.Layout, o.GoBin, o.Log); err != nil {
		return "", err
	}
	if err := FetchPackages(ctx, o.Layout, o.Log); err != nil {
		return "", err
	}
	pause, err := BuildPauseImage(ctx, o.Layout, o.GoBin, o.Log)
	if err != nil {
		return "", err
	}
	logf("kube-up: binaries and images ready in %s", time.Since(t0).Round(100*time.Millisecond))

	// The record, before anything on the host changes.
	t1 := time.Now()
	for _, d := range []string{o.StateDir, o.RulesDir(), o.LogDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
	}
	before, err := CaptureHostState(o.RulesDir())
	if err != nil {
		os.RemoveAll(o.StateDir)
		return "", fmt.Errorf("record the host state: %w", err)
	}
	rec := &Record{Version: o.Version, CacheDir: o.CacheDir, StateDir: o.StateDir, Started: t1, Before: before}
	if err := rec.save(o.RecordFile()); err != nil {
		os.RemoveAll(o.StateDir)
		return "", err
	}

	failing := ""
	fail := func(err error) (string, error) {
		var died errDied
		if errors.As(err, &died) {
			failing = died.name
		}
		if failing != "" {
			logf("kube-up: %s failed: %v; the end of %s:", failing, err, o.LogFile(failing))
			for _, l := range tail(o.LogFile(failing), 25) {
				logf("  | %s", l)
			}
		}
		logf("kube-up: stopping what started and restoring the host")
		if derr := Down(context.WithoutCancel(ctx), o); derr != nil {
			logf("kube-up: kube-down after the failure: %v", derr)
		}
		return "", err
	}
	var ws []watched
	start := func(name, exe string, args []string) error {
		failing = name
		p, done, err := startProc(name, exe, args, o.LogFile(name))
		if err != nil {
			return err
		}
		rec.Procs = append(rec.Procs, p)
		ws = append(ws, watched{name, done})
		return rec.save(o.RecordFile())
	}

	if err := os.MkdirAll(o.CNIConfDir(), 0o755); err != nil {
		return fail(err)
	}
	if err := WritePKI(o.PKIDir()); err != nil {
		return fail(fmt.Errorf("certificates: %w", err))
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", o.Ports.APIServer)
	for _, user := range []string{"admin", "controller-manager", "scheduler", "kubelet", "kube-proxy"} {
		kc, err := Kubeconfig(server, o.PKIDir(), user)
		if err == nil {
			err = os.WriteFile(o.Kubeconfig(user), []byte(kc), 0o600)
		}
		if err != nil {
			return fail(err)
		}
	}
	files := map[string]string{
		o.ContainerdConfig(): ContainerdConfig(o.Layout, pause),
		filepath.Join(o.CNIConfDir(), "10-lbchaos.conflist"): CNIConfig(o.Layout),
		o.KubeletConfig():   KubeletConfig(o.Layout, o.Ports),
		o.KubeProxyConfig(): KubeProxyConfig(o.Layout, o.Ports, o.ProxyMode),
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fail(err)
		}
	}

	if err := start("containerd", "/usr/bin/containerd", []string{"--config", o.ContainerdConfig()}); err != nil {
		return fail(err)
	}
	if err := poll(ctx, socketTimeout, ws, "containerd's socket", func() (bool, string) {
		return socketAnswers(o.ContainerdSocket()), "no answer on " + o.ContainerdSocket()
	}); err != nil {
		return fail(err)
	}
	failing = "" // an import's error says it all
	if err := ImportImages(ctx, o.Layout, append([]string{pause}, o.Images...), o.Log); err != nil {
		return fail(err)
	}

	if err := start("etcd", o.EtcdBin(), etcdArgs(o.Layout, o.Ports)); err != nil {
		return fail(err)
	}
	plain := httpClientPlain()
	etcdHealth := fmt.Sprintf("http://127.0.0.1:%d/health", o.Ports.Etcd)
	if err := poll(ctx, socketTimeout, ws, "etcd /health", func() (bool, string) {
		code, body := get(ctx, plain, etcdHealth)
		return code == 200 && strings.Contains(string(body), "true"), fmt.Sprintf("HTTP %d %s", code, body)
	}); err != nil {
		return fail(err)
	}

	if err := start("kube-apiserver", o.Bin("kube-apiserver"), apiserverArgs(o.Layout, o.Ports)); err != nil {
		return fail(err)
	}
	api, err := apiClient(o.PKIDir())
	if err != nil {
		return fail(err)
	}
	tAPI := time.Now()
	if err := poll(ctx, readyTimeout, ws, "kube-apiserver /readyz", func() (bool, string) {
		code, body := get(ctx, api, server+"/readyz")
		return code == 200, fmt.Sprintf("HTTP %d %s", code, lastLine(body))
	}); err != nil {
		return fail(err)
	}
	logf("kube-up: kube-apiserver ready %s after its start", time.Since(tAPI).Round(100*time.Millisecond))

	if err := start("kube-controller-manager", o.Bin("kube-controller-manager"), controllerManagerArgs(o.Layout, o.Ports)); err != nil {
		return fail(err)
	}
	if err := start("kube-scheduler", o.Bin("kube-scheduler"), schedulerArgs(o.Layout, o.Ports)); err != nil {
		return fail(err)
	}
	if err := start("kubelet", o.Bin("kubelet"), kubeletArgs(o.Layout)); err != nil {
		return fail(err)
	}
	tKubelet := time.Now()
	if err := poll(ctx, readyTimeout, ws, "node localhost Ready", func() (bool, string) {
		code, body := get(ctx, api, server+"/api/v1/nodes/localhost")
		if code != 200 {
			return false, fmt.Sprintf("GET node: HTTP %d", code)
		}
		return NodeReady(body)
	}); err != nil {
		return fail(err)
	}
	logf("kube-up: node localhost Ready %s after the kubelet's start", time.Since(tKubelet).Round(100*time.Millisecond))

	// Services: kube-proxy, and the FORWARD accept that lets packets
	// between pods cross Docker's DROP policy.
	failing = ""
	if err := acceptForward(); err != nil {
		return fail(err)
	}
	if err := start("kube-proxy", o.Bin("kube-proxy"), kubeProxyArgs(o.Layout)); err != nil {
		return fail(err)
	}
	tProxy := time.Now()
	proxyHealth := fmt.Sprintf("http://127.0.0.1:%d/healthz", o.Ports.ProxyHealthz)
	if err := poll(ctx, readyTimeout, ws, "kube-proxy synced", func() (bool, string) {
		if code, body := get(ctx, plain, proxyHealth); code != 200 {
			return false, fmt.Sprintf("healthz: HTTP %d %s", code, lastLine(body))
		}
		return ProxySynced(o.ProxyMode)
	}); err != nil {
		return fail(err)
	}
	logf("kube-up: kube-proxy (%s mode) synced %s after its start", o.ProxyMode, time.Since(tProxy).Round(100*time.Millisecond))
	failing = "kube-controller-manager"
	if err := poll(ctx, readyTimeout, ws, "service account default/default", func() (bool, string) {
		code, _ := get(ctx, api, server+"/api/v1/namespaces/default/serviceaccounts/default")
		return code == 200, fmt.Sprintf("HTTP %d", code)
	}); err != nil {
		return fail(err)
	}
	logf("kube-up: ready in %s after the record (%s)", time.Since(t1).Round(100*time.Millisecond), rssSummary(rec.Procs))
	logf("kube-up: logs in %s; make kube-down stops it and restores the host", o.LogDir())
	return o.Kubeconfig("admin"), nil
}

// healthy reports whether a recorded cluster answers /readyz.
func healthy(ctx context.Context, l Layout, p Ports) bool {
	api, err := apiClient(l.PKIDir())
	if err != nil {
		return false
	}
	code, _ := get(ctx, api, fmt.Sprintf("https://127.0.0.1:%d/readyz", p.APIServer))
	return code == 200
}

// exes are the binaries only a local cluster runs (the containerd binary
// is the host's and is matched by marks instead).
func (l Layout) exes() []string {
	out := []string{l.EtcdBin()}
	for _, c := range Components {
		out = append(out, l.Bin(c))
	}
	return out
}

// marks are command-line arguments only this cluster's containerd and its
// shims carry.
func (l Layout) marks() []string {
	return []string{l.ContainerdConfig(), l.ContainerdSocket()}
}

// RSS reads a process's resident set in MiB.
func RSS(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

func rssSummary(procs []Proc) string {
	var parts []string
	total := 0.0
	for _, p := range procs {
		r := RSS(p.PID)
		total += r
		parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, r))
	}
	return fmt.Sprintf("RSS MiB: %s; total %.0f", strings.Join(parts, ", "), total)
}

func tail(path string, n int) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

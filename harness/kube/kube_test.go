package kube

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

func TestResolveNetwork(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    Network
		host string
		want Network
	}{
		{"auto loopback v4", NetworkAuto, "https://127.0.0.1:6443", NetworkHost},
		{"auto loopback v6", NetworkAuto, "https://[::1]:6443", NetworkHost},
		{"auto localhost", "", "https://localhost:6443", NetworkHost},
		{"auto host:port", NetworkAuto, "127.0.0.1:6443", NetworkHost},
		{"auto remote", NetworkAuto, "https://10.0.0.1:6443", NetworkPod},
		{"auto name", NetworkAuto, "https://api.example.com", NetworkPod},
		{"host given", NetworkHost, "https://10.0.0.1:6443", NetworkHost},
		{"pod given", NetworkPod, "https://127.0.0.1:6443", NetworkPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveNetwork(tc.n, tc.host)
			if err != nil || got != tc.want {
				t.Errorf("ResolveNetwork(%q, %q) = %q, %v; want %q", tc.n, tc.host, got, err, tc.want)
			}
		})
	}
	if _, err := ResolveNetwork("overlay", "https://127.0.0.1"); err == nil {
		t.Error("ResolveNetwork(overlay): no error")
	}
}

func TestOwnerLabelValue(t *testing.T) {
	for _, tc := range []struct{ owner, want string }{
		{"box/123/4567", "box_123_4567"},
		{"my-host.example/1/2", "my-host.example_1_2"},
		{strings.Repeat("h", 70) + "/1/2", ""}, // too long for a label value
	} {
		if got := ownerLabelValue(tc.owner); got != tc.want {
			t.Errorf("ownerLabelValue(%q) = %q, want %q", tc.owner, got, tc.want)
		}
	}
}

func TestCPULimit(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		want string
	}{
		{0.02, "20m"},
		{0.5, "500m"},
		{1, "1"},
		{1.25, "1250m"},
		{0.0001, "1m"}, // the smallest a limit can be
		{0, liftedCPU},
		{-1, liftedCPU},
	} {
		q := cpuLimit(tc.cpus)
		if got := q.String(); got != tc.want {
			t.Errorf("cpuLimit(%v) = %s, want %s", tc.cpus, got, tc.want)
		}
	}
}

// TestPeers: the processes `lbchaos signal` stops are every one of the
// pod's but its init, itself and other signal helpers.
func TestPeers(t *testing.T) {
	proc := t.TempDir()
	write := func(pid int, argv ...string) {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1, "/pause")
	write(7, "/lbchaos", "serve", "--id", "0")
	write(12, "/lbchaos", "signal", "STOP") // an earlier helper still exiting
	write(30, "/lbchaos", "signal", "CONT") // this process
	write(31, "/app", "--port", "8080")
	write(40, "/lbchaos", "serve", "--upstream", "http://127.0.0.1:8081", "--listen", ":8080") // an app's sidecar
	write(41, "/lbchaos", "serve", "--upstream=http://127.0.0.1:8081")
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := peers(proc, 30)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{7, 31}; !slices.Equal(got, want) {
		t.Errorf("peers = %v, want %v", got, want)
	}
	if _, err := SignalPeers(proc, "KILL"); err == nil {
		t.Error("SignalPeers(KILL): no error; only STOP and CONT are sent")
	}
}

// TestConnectRefused: no API server at the address is ErrNoCluster, with
// what to do about it.
func TestConnectRefused(t *testing.T) {
	_, err := New(t.Context(), Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Image: "x"})
	if !errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "make kube-up") {
		t.Errorf("New against a closed port: %v; want ErrNoCluster saying how to start one", err)
	}
	_, err = New(t.Context(), Options{Kubeconfig: filepath.Join(t.TempDir(), "missing"), Image: "x"})
	if !errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("New with a missing kubeconfig: %v; want ErrNoCluster naming --kubeconfig", err)
	}
	if _, err := New(t.Context(), Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}}); err == nil || !strings.Contains(err.Error(), "image") {
		t.Errorf("New without an image: %v", err)
	}
}

// A container that waits for a reason it will not get past is a start
// failure at once; a kubelet whose secret cache is not synced yet tries
// again, and so does the harness.
func TestFatalWaiting(t *testing.T) {
	for _, tc := range []struct {
		reason, message string
		want            bool
	}{
		{"ErrImageNeverPull", `Container image "x:1" is not present with pull policy of Never`, true},
		{"CreateContainerConfigError", `secret "lbchaos-token" not found`, true},
		{"CreateContainerConfigError", "failed to sync secret cache: timed out waiting for the condition", false},
		{"CreateContainerConfigError", "failed to sync configmap cache: timed out waiting for the condition", false},
		{"ContainerCreating", "", false},
		{"CrashLoopBackOff", "back-off 10s restarting failed container", false},
	} {
		if got := fatalWaiting(&corev1.ContainerStateWaiting{Reason: tc.reason, Message: tc.message}); got != tc.want {
			t.Errorf("%s: %q: fatal %v, want %v", tc.reason, tc.message, got, tc.want)
		}
	}
	if fatalWaiting(nil) {
		t.Error("not waiting: fatal")
	}
}

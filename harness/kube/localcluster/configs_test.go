package localcluster

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var testLayout = Layout{Version: "v1.34.4", CacheDir: "/cache/v1.34.4", StateDir: "/state"}

func TestKubeletConfig(t *testing.T) {
	var c map[string]any
	if err := yaml.Unmarshal([]byte(KubeletConfig(testLayout, DefaultPorts)), &c); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"kind":                     "KubeletConfiguration",
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"containerRuntimeEndpoint": "unix:///state/containerd/containerd.sock",
		"address":                  "127.0.0.1",
		"podLogsDir":               "/state/pod-logs",
	} {
		if c[key] != want {
			t.Errorf("%s = %v, want %v", key, c[key], want)
		}
	}
}

func TestCNIConfig(t *testing.T) {
	var c struct {
		Plugins []struct {
			Type, Bridge string
			IPMasq       bool
			IPAM         struct{ DataDir string } `json:"ipam"`
		}
	}
	if err := json.Unmarshal([]byte(CNIConfig(testLayout)), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Plugins) != 1 || c.Plugins[0].Type != "bridge" || c.Plugins[0].Bridge != BridgeName || c.Plugins[0].IPMasq {
		t.Errorf("plugins %+v: want one bridge %s without masquerading", c.Plugins, BridgeName)
	}
	if got := c.Plugins[0].IPAM.DataDir; got != "/state/cni/ipam" {
		t.Errorf("IP allocations in %q, want the state directory", got)
	}
}

func TestContainerdConfig(t *testing.T) {
	c := ContainerdConfig(testLayout, "lbchaos-kube-pause:abc")
	for _, s := range []string{
		`root = "/state/containerd/root"`,
		`address = "/state/containerd/containerd.sock"`,
		`sandbox_image = "lbchaos-kube-pause:abc"`,
		`restrict_oom_score_adj = true`,
		`bin_dir = "/cache/v1.34.4/cni/usr/lib/cni"`,
		`path = "/state/containerd/opt"`,
	} {
		if !strings.Contains(c, s) {
			t.Errorf("containerd config lacks %s", s)
		}
	}
	if strings.Contains(c, `disabled_plugins = ["cri"]`) {
		t.Error("CRI must be enabled")
	}
}

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/state", true},
		{"/state/containerd/state/x/shm", true},
		{"/stateful", false},
		{"/run/netns/cni-1", true},
		{"/run/netnsx", false},
	} {
		if got := under(tc.path, []string{"/state", "/run/netns"}); got != tc.want {
			t.Errorf("under(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

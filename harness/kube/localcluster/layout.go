package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultVersion is the Kubernetes release Up builds. Kubernetes 1.35 and
// later refuse cgroup v1 by default and end support for containerd 1.x, so
// machines like Debian 12 stay on 1.34.
const DefaultVersion = "v1.34.4"

// DefaultStateDir holds everything of a running cluster.
const DefaultStateDir = "/tmp/lbchaos-kube"

// Layout says where the cluster's files live. The cache directory outlives
// a cluster (built binaries, unpacked packages); the state directory is
// created by Up and removed by Down.
type Layout struct {
	Version  string // Kubernetes release, "v1.34.4"
	CacheDir string // per version: .../lbchaos/kube/<Version>
	StateDir string
}

// DefaultCacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/lbchaos/kube/<version>.
func DefaultCacheDir(version string) string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "lbchaos", "kube", version)
}

// StagingVersion maps a Kubernetes release to the version of its staging
// modules (k8s.io/api and friends): v1.34.4 → v0.34.4.
func StagingVersion(version string) (string, error) {
	rest, ok := strings.CutPrefix(version, "v1.")
	if !ok || strings.Count(rest, ".") != 1 {
		return "", fmt.Errorf("kubernetes version %q: want v1.<minor>.<patch>", version)
	}
	return "v0." + rest, nil
}

// Paths of the cache.
func (l Layout) BinDir() string         { return filepath.Join(l.CacheDir, "bin") }
func (l Layout) Bin(name string) string { return filepath.Join(l.BinDir(), name) }
func (l Layout) SrcDir() string         { return filepath.Join(l.CacheDir, "src") }
func (l Layout) DebDir() string         { return filepath.Join(l.CacheDir, "debs") }
func (l Layout) EtcdBin() string        { return filepath.Join(l.CacheDir, "etcd", "usr", "bin", "etcd") }
func (l Layout) CNIBinDir() string      { return filepath.Join(l.CacheDir, "cni", "usr", "lib", "cni") }

// Paths of the state directory.
func (l Layout) state(elem ...string) string {
	return filepath.Join(append([]string{l.StateDir}, elem...)...)
}
func (l Layout) RecordFile() string            { return l.state("record.json") }
func (l Layout) LogDir() string                { return l.state("logs") }
func (l Layout) LogFile(name string) string    { return l.state("logs", name+".log") }
func (l Layout) PKIDir() string                { return l.state("pki") }
func (l Layout) PKI(name string) string        { return l.state("pki", name) }
func (l Layout) Kubeconfig(user string) string { return l.state(user + ".kubeconfig") }
func (l Layout) EtcdDataDir() string           { return l.state("etcd") }
func (l Layout) ContainerdDir() string         { return l.state("containerd") }
func (l Layout) ContainerdConfig() string      { return l.state("containerd", "config.toml") }
func (l Layout) ContainerdSocket() string      { return l.state("containerd", "containerd.sock") }
func (l Layout) CNIConfDir() string            { return l.state("cni", "net.d") }
func (l Layout) CNIDataDir() string            { return l.state("cni", "ipam") }
func (l Layout) KubeletDir() string            { return l.state("kubelet") }
func (l Layout) KubeletConfig() string         { return l.state("kubelet-config.yaml") }
func (l Layout) KubeProxyConfig() string       { return l.state("kube-proxy-config.yaml") }
func (l Layout) PodLogsDir() string            { return l.state("pod-logs") }
func (l Layout) RulesDir() string              { return l.state("rules-before") }

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNamesLocalCluster: a kubeconfig of another API server never names
// the local cluster; the local cluster's own does while it runs.
func TestNamesLocalCluster(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.9.9.9:6443"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(other, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if namesLocalCluster(other) {
		t.Errorf("%s (https://10.9.9.9:6443) named the local cluster", other)
	}
	if namesLocalCluster(filepath.Join(t.TempDir(), "missing.kubeconfig")) {
		t.Error("a missing kubeconfig named the local cluster")
	}
	l := localLayout()
	if _, err := os.Stat(l.RecordFile()); err != nil {
		t.Logf("no local cluster runs (%v): its own kubeconfig not checked", err)
		return
	}
	if !namesLocalCluster(l.Kubeconfig("admin")) {
		t.Errorf("the local cluster's own kubeconfig %s did not name it", l.Kubeconfig("admin"))
	}
}

package localcluster_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
)

const kubernetesGoMod = `module k8s.io/kubernetes

go 1.24.0

require (
	k8s.io/api v0.0.0
	k8s.io/klog/v2 v2.130.1
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/example/other => github.com/example/fork v1.0.0
)

replace k8s.io/kubelet => ./staging/src/k8s.io/kubelet
`

func TestStagingReplaces(t *testing.T) {
	got, err := localcluster.StagingReplaces([]byte(kubernetesGoMod), "v0.34.4")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"k8s.io/api => k8s.io/api v0.34.4",
		"k8s.io/apimachinery => k8s.io/apimachinery v0.34.4",
		"k8s.io/client-go => k8s.io/client-go v0.34.4",
		"k8s.io/kubelet => k8s.io/kubelet v0.34.4",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("StagingReplaces (-want +got):\n%s", d)
	}
	mod := localcluster.ScratchGoMod("v1.34.4", got)
	for _, s := range []string{"require k8s.io/kubernetes v1.34.4", "\tk8s.io/kubelet => k8s.io/kubelet v0.34.4\n"} {
		if !strings.Contains(mod, s) {
			t.Errorf("scratch go.mod lacks %q:\n%s", s, mod)
		}
	}
}

func TestStagingReplacesNone(t *testing.T) {
	if _, err := localcluster.StagingReplaces([]byte("module x\n"), "v0.34.4"); err == nil {
		t.Error("a go.mod without staging replaces: want an error")
	}
}

func TestStagingVersion(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"release", "v1.34.4", "v0.34.4"},
		{"first patch", "v1.33.0", "v0.33.0"},
		{"no v", "1.34.4", ""},
		{"no patch", "v1.34", ""},
		{"major 2", "v2.0.1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := localcluster.StagingVersion(tc.in)
			if (err != nil) != (tc.want == "") || got != tc.want {
				t.Errorf("StagingVersion(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

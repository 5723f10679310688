package experiments

import (
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// A network fault acts on a port of the harness's host; a Deployment's
// pods have a network of their own.
func TestDeploymentRefusesNetworkFaults(t *testing.T) {
	for _, tt := range []struct{ mode, fault string }{
		{"loss", "{mode: loss, p: 0.05}"},
		{"syn-drop", "{mode: syn-drop}"},
	} {
		_, err := Parse("t.yaml", []byte(lifecycleFile("  kube: {workload: deployment}\nfaults: [{instance: 0, at: 1s, fault: "+tt.fault+"}]\n")))
		want := `faults[0].fault.mode: "` + tt.mode + `" needs the instance's port in this host's network namespace; a Deployment's pods (workload: deployment) have their own`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Parse: %v, want an error containing %q", tt.mode, err, want)
		}
	}
	e, err := Parse("t.yaml", []byte(lifecycleFile("faults: [{instance: 0, at: 1s, until: 2s, fault: {mode: loss, p: 0.05}}]\n")))
	if err != nil {
		t.Fatalf("loss on pods of any backend: %v", err)
	}
	if !faultyserver.IsNetworkFault(e.Faults[0].Spec) {
		t.Errorf("fault %v is not a network fault", e.Faults[0].Spec)
	}
}

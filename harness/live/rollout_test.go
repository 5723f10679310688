package live

import (
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/process"
)

// TestCheckWorkload: a Deployment runs only where a fleet can be put
// behind a Service; the error names the field and the backends.
func TestCheckWorkload(t *testing.T) {
	exp := &experiments.Experiment{Instances: experiments.Instances{Count: 2, Kube: experiments.Kube{Workload: experiments.WorkloadPods}}}
	if err := checkWorkload(exp, process.Provider{}); err != nil {
		t.Errorf("workload pods on process backends: %v", err)
	}
	exp.Instances.Kube.Workload = experiments.WorkloadDeployment
	err := checkWorkload(exp, process.Provider{})
	if err == nil || !strings.Contains(err.Error(), "instances.kube.workload: deployment") || !strings.Contains(err.Error(), "--backends kube") {
		t.Errorf("workload deployment on process backends: %v, want an error naming instances.kube.workload and --backends kube", err)
	}
}

package sim

import (
	"context"
	"testing"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// TestSimExternalInstances: the simulator runs external instances only
// from the model the file gives of them.
func TestSimExternalInstances(t *testing.T) {
	tests := []struct {
		name      string
		instances string
		wantErr   string // "" = runs
	}{
		{
			name:      "no model",
			instances: "{external: [http://10.0.0.1:80, http://10.0.0.2:80]}",
			wantErr:   "ext.yaml: instances.external: the simulator cannot model instances it did not start; give instances.service (a model of their service time) to simulate them, or run them with --engine real",
		},
		{
			name:      "count only",
			instances: "{count: 2}",
			wantErr:   "ext.yaml: instances.service: is required to simulate the instances, e.g. service: {dist: fixed, value: 10ms}; without one the file runs only against instances that already run (--engine real with --backend URL, one per instance)",
		},
		{
			name:      "modeled",
			instances: "{workers: 2, service: {dist: fixed, value: 5ms}, external: [http://10.0.0.1:80, http://10.0.0.2:80]}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "ext", "duration: 1s\nrate: 100\ninstances: "+tt.instances+"\nstrategies: [round-robin]\n")
			sum, err := harness.Run(context.Background(), exp, harness.Options{Engine: Engine{}})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || sum != nil {
					t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st := runtest.StrategyByName(t, sum, "round-robin"); st.Requests == 0 || len(st.Instances) != 2 {
				t.Errorf("%d requests over %d instances", st.Requests, len(st.Instances))
			}
		})
	}
}

package fleet_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// An external instance with a sidecar takes its load, and a network
// fault's rules, at the sidecar's address: that address must be on this
// host's loopback, whatever the instance's own.
func TestCheckNetworkFaultsBehindSidecars(t *testing.T) {
	exp, err := experiments.Parse("x.yaml", []byte(`name: x
duration: 2s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 1, at: 1s, fault: {mode: loss, p: 0.05}}
strategies: [p2c]
`))
	if err != nil {
		t.Fatal(err)
	}
	hostErr := ""
	if os.Geteuid() != 0 {
		hostErr = `x.yaml: faults[0].mode: "loss" needs root to add iptables rules`
	}
	first := experiments.External{URL: "http://127.0.0.1:9001", Sidecar: "http://127.0.0.1:9101"}
	tests := []struct {
		name   string
		second experiments.External
		want   string // the error's start; "" none
	}{
		{"an instance elsewhere behind a sidecar on this host's loopback",
			experiments.External{URL: "http://10.0.0.2:9002", Sidecar: "http://127.0.0.1:9102"}, hostErr},
		{"an instance on this host's loopback behind a sidecar elsewhere",
			experiments.External{URL: "http://127.0.0.1:9002", Sidecar: "http://10.0.0.3:9102"},
			`x.yaml: faults[0].mode: "loss" needs the instance's port in this host's network namespace; instance 1 (http://10.0.0.3:9102) is not on its loopback`},
		{"an instance on this host's loopback without a sidecar",
			experiments.External{URL: "http://127.0.0.1:9002"}, hostErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := exp.Apply(experiments.Overrides{External: []experiments.External{first, tt.second}})
			if err != nil {
				t.Fatal(err)
			}
			err = fleet.Check(e, named("external"))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("Check = %v\nwant an error starting with %s", err, tt.want)
			}
		})
	}
}

package fleet_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/process"
)

// named is a provider known only by its name.
type named string

func (p named) Name() string { return string(p) }
func (named) Start(context.Context, fleet.Spec) (fleet.Fleet, error) {
	panic("not started")
}

// ported is a provider that says whether its instances listen on this
// host's loopback, as the docker and kube providers do.
type ported struct {
	named
	ok  bool
	why string
}

func (p ported) HostPorts() (bool, string) { return p.ok, p.why }

func TestCheckNetworkFaults(t *testing.T) {
	exp, err := experiments.Parse("x.yaml", []byte(`name: x
duration: 2s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail}}
  - {instance: 1, at: 1s, fault: {mode: loss, p: 0.05}}
strategies: [p2c]
`))
	if err != nil {
		t.Fatal(err)
	}
	// What a host-port provider gets depends on who runs the test.
	hostErr := ""
	if uid := os.Geteuid(); uid != 0 {
		hostErr = `x.yaml: faults[1].mode: "loss" needs root to add iptables rules`
	}
	external := func(urls ...string) *experiments.Experiment {
		var ext []experiments.External
		for _, u := range urls {
			ext = append(ext, experiments.External{URL: u, Sidecar: u})
		}
		e, err := exp.Apply(experiments.Overrides{External: ext})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	tests := []struct {
		name string
		exp  *experiments.Experiment
		p    fleet.Provider
		want string // the error's start; "" none
	}{
		{"process backends", exp, process.Provider{}, hostErr},
		{"docker backends", exp, ported{named: "docker", ok: true}, hostErr},
		{"kube backends", exp, ported{named: "kube", why: "kube pods have their own"},
			`x.yaml: faults[1].mode: "loss" needs the instance's port in this host's network namespace; kube pods have their own`},
		{"backends that do not say", exp, named("elsewhere"),
			`x.yaml: faults[1].mode: "loss" needs the instance's port in this host's network namespace; elsewhere backends do not say that their instances listen on this host`},
		{"external instances on this host's loopback", external("http://127.0.0.1:9001", "http://127.0.0.1:9002"), named("external"), hostErr},
		{"an external instance elsewhere", external("http://127.0.0.1:9001", "http://10.0.0.2:9002"), named("external"),
			`x.yaml: faults[1].mode: "loss" needs the instance's port in this host's network namespace; instance 1 (http://10.0.0.2:9002) is not on its loopback`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fleet.Check(tt.exp, tt.p)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("Check = %v\nwant an error starting with %s", err, tt.want)
			}
		})
	}
}

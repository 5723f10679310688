package fleet

import (
	"fmt"
	"net/url"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/netfault"
)

// HostPortProvider is implemented by providers whose instances listen on
// loopback ports of this host's network namespace, where network faults
// (faultyserver.NetworkFault: loss, syn-drop) act: the harness has the
// kernel drop the packets of an instance's port (harness/netfault).
type HostPortProvider interface {
	Provider
	// HostPorts reports whether the instances listen on this host's
	// loopback; false says why not, as the end of a sentence.
	HostPorts() (bool, string)
}

// hostPorts reports whether p's instances listen on this host's loopback
// ports, and why not.
func hostPorts(p Provider) (bool, string) {
	if hp, ok := p.(HostPortProvider); ok {
		return hp.HostPorts()
	}
	return false, fmt.Sprintf("%s backends do not say that their instances listen on this host", p.Name())
}

// checkNetwork returns an error naming the first network fault of exp
// that p's backends cannot take, or that this process cannot carry out
// (it needs root and iptables). ext, when set, lists the external
// instances, which take one when the address the run reaches them at
// (externalAddr) is on this host's loopback.
func checkNetwork(exp *experiments.Experiment, p Provider, ext []experiments.External) error {
	for i, f := range exp.Faults {
		if !faultyserver.IsNetworkFault(f.Spec) {
			continue
		}
		what := fmt.Sprintf("faults[%d].mode: %q", i, f.Spec.Mode())
		if len(ext) > 0 {
			addr := externalAddr(ext[f.Instance])
			u, err := url.Parse(addr)
			if err == nil {
				_, err = netfault.TargetOf(u)
			}
			if err != nil {
				return fmt.Errorf("%s: %s needs the instance's port in this host's network namespace; instance %d (%s) is not on its loopback: %v",
					exp.Source, what, f.Instance, addr, err)
			}
		} else if ok, why := hostPorts(p); !ok {
			return fmt.Errorf("%s: %s needs the instance's port in this host's network namespace; %s", exp.Source, what, why)
		}
		if err := netfault.Available(); err != nil {
			return fmt.Errorf("%s: %s %w", exp.Source, what, err)
		}
	}
	return nil
}

// externalAddr is the address the run sends an external instance's load
// to, and whose port a network fault's rules then act on (the backend's
// URL, see harness/external): its sidecar's when it has one, else its own.
func externalAddr(x experiments.External) string {
	if x.Sidecar != "" {
		return x.Sidecar
	}
	return x.URL
}

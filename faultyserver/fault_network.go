package faultyserver

import "fmt"

// NetworkFault is a fault that the kernel's packet filter carries out on an
// instance's traffic (iptables rules on its port), rather than the server:
// the server and the sidecar refuse it (SetFault), and the harness applies
// it to the instance's address for as long as the fault lasts.
type NetworkFault interface {
	Fault
	networkLevel()
}

// IsNetworkFault reports whether f is carried out by the kernel's packet
// filter, not the server.
func IsNetworkFault(f Fault) bool {
	_, ok := f.(NetworkFault)
	return ok
}

// NetworkLevel is embedded by network faults: it marks them.
type NetworkLevel struct{}

func (NetworkLevel) networkLevel() {}

// errNetworkFault is SetFault's answer to a network-level fault.
func errNetworkFault(f Fault) error {
	return fmt.Errorf("mode: %q drops packets in the kernel, not in the server; the harness applies it to the instance's port", f.Mode())
}

func (Loss) unmodeled() string {
	return "loss drops packets in the kernel, and the retransmissions it causes are not modelled"
}

func (SynDrop) unmodeled() string {
	return "syn-drop drops connection attempts in the kernel, which the simulator does not model"
}

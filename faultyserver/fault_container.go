package faultyserver

import "fmt"

// ContainerFault is a fault that acts on the container running an instance,
// through the container runtime, rather than inside the server: the server
// refuses it (SetFault), and a container backend applies it, with its
// recovery when the fault is cleared. Its Plan approximates the effect for
// engines without containers, such as a simulator.
type ContainerFault interface {
	Fault
	containerLevel()
}

// IsContainerFault reports whether f acts on the container, not the server.
func IsContainerFault(f Fault) bool {
	_, ok := f.(ContainerFault)
	return ok
}

// errContainerFault is SetFault's answer to a container-level fault.
func errContainerFault(f Fault) error {
	return fmt.Errorf("mode: %q acts on the instance's container, not on the server; a container backend applies it", f.Mode())
}

// ContainerLevel is embedded by container faults: it marks them, and since a
// frozen or dead container answers no health check at all, it takes no
// health_status parameter.
type ContainerLevel struct{}

// HealthStatus returns 200; a container fault leaves /healthz to the
// container's state.
func (ContainerLevel) HealthStatus() int { return 200 }

func (ContainerLevel) containerLevel() {}

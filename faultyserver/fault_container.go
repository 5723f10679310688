package faultyserver

import (
	"context"
	"fmt"
)

// Containers is what a backend provider offers when its instances run in
// containers (or pods): the runtime-level actions container faults take.
// Instance ids are the fleet's.
type Containers interface {
	// Pause freezes instance id's processes (cgroup freezer): connections
	// stay open and requests hang.
	Pause(ctx context.Context, id int) error
	// Unpause thaws a paused instance.
	Unpause(ctx context.Context, id int) error
	// Kill crashes instance id (SIGKILL); it stays down until Restart.
	Kill(ctx context.Context, id int) error
	// Restart starts a killed instance again and returns once it answers its
	// health check. Its address may change: the fleet reports the new one.
	Restart(ctx context.Context, id int) error
	// SetCPU limits instance id to cpus CPUs (e.g. 0.1); 0 lifts the limit.
	SetCPU(ctx context.Context, id int, cpus float64) error
}

// ContainerFault is a fault that acts on the container running an instance,
// through the container runtime, rather than inside the server: the server
// refuses it (SetFault), and a provider with containers applies it through
// Inflict, and undoes it through Heal when the fault is cleared. Its Plan
// approximates the effect for engines without containers, such as a
// simulator, and Reachable says whether the instance answers anything at
// all (an active health probe) while it lasts.
type ContainerFault interface {
	Fault
	// Inflict applies the fault to instance id.
	Inflict(ctx context.Context, c Containers, id int) error
	// Heal undoes it. The instance's address may have changed afterwards
	// (a restarted container), so callers read it again.
	Heal(ctx context.Context, c Containers, id int) error
	// Reachable reports whether the instance answers at all under the fault.
	Reachable() bool
	// Relocates reports whether Heal may bring the instance back on another
	// address (a restarted container's new port), which a balancer must
	// follow.
	Relocates() bool
	containerLevel()
}

// IsContainerFault reports whether f acts on the container, not the server.
func IsContainerFault(f Fault) bool {
	_, ok := f.(ContainerFault)
	return ok
}

// ProbeHealthy is the verdict of an active health probe of an instance
// under fault f (nil: none): unhealthy when the instance answers nothing
// (a container fault, a blackhole or a refusal whose Reachable is false),
// else healthy when its /healthz status is 2xx.
func ProbeHealthy(f Fault) bool {
	if f == nil {
		return true
	}
	if c, ok := f.(interface{ Reachable() bool }); ok && !c.Reachable() {
		return false
	}
	st := f.HealthStatus()
	return st >= 200 && st < 300
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

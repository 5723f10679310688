package harness

import "context"

// ContainerChaos is implemented by fleets whose instances are containers:
// the container-level faults (pause, kill, cpu) act through it, each with
// its recovery.
type ContainerChaos interface {
	// Pause freezes instance id's processes (cgroup freezer): connections
	// stay open and requests hang.
	Pause(ctx context.Context, id int) error
	// Unpause thaws a paused instance.
	Unpause(ctx context.Context, id int) error
	// Kill crashes instance id (SIGKILL); it stays down until Restart.
	Kill(ctx context.Context, id int) error
	// Restart starts a killed instance again and returns once it answers its
	// health check. Its published port may change: Backends()[id] carries
	// the new URL afterwards.
	Restart(ctx context.Context, id int) error
	// SetCPU limits instance id to cpus CPUs (e.g. 0.1); 0 lifts the limit.
	SetCPU(ctx context.Context, id int, cpus float64) error
}

// ContainerProvider is implemented by providers whose fleets implement
// ContainerChaos.
type ContainerProvider interface {
	Provider
	ContainerFaults() bool
}

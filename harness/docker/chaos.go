package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sync/errgroup"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

// Pause implements faultyserver.Containers (docker pause).
func (f *dockerFleet) Pause(ctx context.Context, id int) error {
	in, err := f.inst(id)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, err := f.p.cli.ContainerPause(ctx, in.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("docker backends: pause instance %d: %w", id, err)
	}
	in.paused = true
	return nil
}

// Unpause implements faultyserver.Containers (docker unpause).
func (f *dockerFleet) Unpause(ctx context.Context, id int) error {
	in, err := f.inst(id)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return f.unpause(ctx, in)
}

func (f *dockerFleet) unpause(ctx context.Context, in *dockerInstance) error {
	if _, err := f.p.cli.ContainerUnpause(ctx, in.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("docker backends: unpause instance %d: %w", in.id, err)
	}
	in.paused = false
	return nil
}

// Kill implements faultyserver.Containers: SIGKILL; the container stays stopped
// (no restart policy) until Restart.
func (f *dockerFleet) Kill(ctx context.Context, id int) error {
	in, err := f.inst(id)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.expectExit.Add(1) // before the exit, which Watch may see first
	if _, err := f.p.cli.ContainerKill(ctx, in.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		in.expectExit.Add(-1)
		if st, serr := in.ctr.State(ctx); serr == nil && !st.Running {
			// It died on its own first (Watch reports that): it is as
			// dead as the kill would leave it, and Restart starts it.
			in.killed, in.paused = true, false
			return nil
		}
		return fmt.Errorf("docker backends: kill instance %d: %w", id, err)
	}
	in.killed = true
	in.paused = false
	return nil
}

// Restart implements faultyserver.Containers: it starts the stopped container, waits
// for its health check and publishes its (possibly new) port in Backends.
func (f *dockerFleet) Restart(ctx context.Context, id int) error {
	in, err := f.inst(id)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return f.start(ctx, in)
}

// start starts in's stopped container and updates its backend.
func (f *dockerFleet) start(ctx context.Context, in *dockerInstance) error {
	if err := in.ctr.Start(ctx); err != nil {
		return fmt.Errorf("docker backends: restart instance %d: %w%s", in.id, err, f.p.logTail(in.ctr))
	}
	in.killed = false
	in.crashed.Store(false)
	return f.republish(ctx, in)
}

// republish re-reads in's published port into Backends.
func (f *dockerFleet) republish(ctx context.Context, in *dockerInstance) error {
	b, err := f.p.backendOf(ctx, in)
	if err != nil {
		return fmt.Errorf("docker backends: instance %d: %w", in.id, err)
	}
	f.Set(in.id, b)
	return nil
}

// SetCPU implements faultyserver.Containers through the engine's update API
// (NanoCPUs). cpus <= 0 lifts the limit: NanoCPUs is set to all the
// engine's CPUs, as 0 would leave the limit unchanged.
func (f *dockerFleet) SetCPU(ctx context.Context, id int, cpus float64) error {
	in, err := f.inst(id)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return f.setCPU(ctx, in, cpus)
}

func (f *dockerFleet) setCPU(ctx context.Context, in *dockerInstance, cpus float64) error {
	nano := int64(f.p.ncpu) * 1e9
	limited := cpus > 0 && cpus < float64(f.p.ncpu)
	if limited {
		nano = int64(cpus * 1e9)
	}
	if nano <= 0 {
		return fmt.Errorf("docker backends: cpu limit %g of instance %d is below the engine's minimum", cpus, in.id)
	}
	_, err := f.p.cli.ContainerUpdate(ctx, in.ctr.GetContainerID(), client.ContainerUpdateOptions{
		Resources: &container.Resources{NanoCPUs: nano},
	})
	if err != nil {
		return fmt.Errorf("docker backends: set cpu limit of instance %d to %g: %w", in.id, cpus, err)
	}
	in.cpuLimited = limited
	return nil
}

// reset brings f's containers back to a new fleet's state, concurrently.
func (f *dockerFleet) reset(ctx context.Context) error {
	return f.resetAll(ctx, f.resetInstance)
}

// resetAll applies reset to every instance concurrently.
func (f *dockerFleet) resetAll(ctx context.Context, reset func(context.Context, *dockerInstance) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, in := range f.insts {
		g.Go(func() error {
			in.mu.Lock()
			defer in.mu.Unlock()
			return reset(gctx, in)
		})
	}
	return g.Wait()
}

// resetInstance brings in back to a new container's state: it thaws it,
// lifts its CPU limit, starts it again if it was killed or crashed (with
// instances.app.restart, restarts the app anyway), resets its server (or sidecar)
// through the control API (fault cleared, counters zeroed) and waits until
// no request of the previous fleet is left in it.
func (f *dockerFleet) resetInstance(ctx context.Context, in *dockerInstance) error {
	in.expectExit.Store(0) // a kill's exit the last fleet's watch did not see
	if in.paused {
		if err := f.unpause(ctx, in); err != nil {
			return err
		}
	}
	if in.cpuLimited {
		if err := f.setCPU(ctx, in, 0); err != nil {
			return err
		}
	}
	if in.killed || in.crashed.Load() {
		if err := f.start(ctx, in); err != nil {
			return err
		}
	} else if f.spec.App != nil && f.spec.App.Restart {
		if err := f.restartApp(ctx, in); err != nil {
			return err
		}
	}
	if err := fleet.ResetServer(ctx, f.Backend(in.id).Control, drainTimeout); err != nil {
		return fmt.Errorf("docker backends: instance %d: %w", in.id, err)
	}
	return nil
}

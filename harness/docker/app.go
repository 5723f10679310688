package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// The user's own image as the instances (experiments.Instances.App): each
// instance is the app's container and an lbchaos sidecar container (the
// backend image running `lbchaos serve --upstream`) in front of it, both in
// the host's network namespace, each on its own 127.0.0.1 port. Load and
// the control API go to the sidecar; container faults act on the app's
// container.

var _ fleet.AppProvider = (*Provider)(nil)

// RunsApps implements fleet.AppProvider.
func (p *Provider) RunsApps() bool { return true }

// labelRole tells an app's container ("app") from its sidecar ("sidecar").
const labelRole = "io.lbchaos.role"

// CheckApp reports, before anything starts, why app cannot run on this
// provider: its image is not on the engine (lbchaos never pulls), or the
// sidecars cannot run in the host's network namespace.
//
// An app with PortEnv runs in the host's network namespace too, on a port
// lbchaos assigns. One without (a fixed port, which N instances cannot
// share there) runs on the engine's default bridge network, its port
// published on a 127.0.0.1 port lbchaos picks, which the binding keeps
// across a restart; the sidecar reaches it through the engine's port
// forwarding (the userland docker-proxy, where the engine uses it).
func (p *Provider) CheckApp(ctx context.Context, app *experiments.App) error {
	if !p.opts.HostNetwork {
		return errors.New("instances.app: lbchaos runs your service and its sidecars in the host's network namespace, which needs a local Linux engine (--docker-network host, or auto); with published ports it cannot run them yet")
	}
	_, err := p.cli.ImageInspect(ctx, app.Image)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("instances.app.image: image %s is not present locally: build it (docker build -t %s ...) or load it (docker load -i ...); lbchaos never pulls", app.Image, app.Image)
	default:
		return fmt.Errorf("instances.app.image: inspect %s: %w", app.Image, err)
	}
}

// tokenEnv is the environment of a server or sidecar container: the
// control token, which lbchaos serve reads from it (never from the command
// line, which ps shows to every user of the host).
func (p *Provider) tokenEnv() map[string]string {
	return map[string]string{faultyserver.TokenEnv: p.opts.Token}
}

// appEnv is the app container's environment: app.Env and its port.
func appEnv(app *experiments.App, port int) map[string]string {
	env := maps.Clone(app.Env)
	if env == nil {
		env = map[string]string{}
	}
	if app.PortEnv != "" {
		env[app.PortEnv] = strconv.Itoa(port)
	}
	return env
}

// appRequests are the container requests of instance id's app and sidecar.
func (p *Provider) appRequests(spec fleet.Spec, seq, id, appPort, sidePort int) (app, side testcontainers.GenericContainerRequest, err error) {
	a := spec.App
	labels := func(role string) map[string]string {
		return map[string]string{LabelRun: p.runID, LabelOwner: p.owner, labelFleet: strconv.Itoa(seq), labelRole: role}
	}
	host := func(hc *container.HostConfig) { hc.NetworkMode = "host" }
	app = testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:              a.Image,
			Name:               fmt.Sprintf("lbchaos-%s-%d-%d-app", p.runID, seq, id),
			Cmd:                a.Args,
			Env:                appEnv(a, appPort),
			Labels:             labels("app"),
			HostConfigModifier: host,
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	}
	if a.PortEnv == "" {
		// A fixed port: the app's own network namespace on the bridge,
		// the port published on appPort of 127.0.0.1.
		port := network.MustParsePort(strconv.Itoa(a.Port) + "/tcp")
		app.ExposedPorts = []string{port.String()}
		app.HostConfigModifier = func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				port: {{HostIP: netip.AddrFrom4([4]byte{127, 0, 0, 1}), HostPort: strconv.Itoa(appPort)}},
			}
		}
	}
	flags, err := faultyserver.SidecarFlagsOf(faultyserver.SidecarConfig{
		ID:         id,
		Upstream:   "http://127.0.0.1:" + strconv.Itoa(appPort),
		HealthPath: a.Health,
		Seed:       fleet.InstanceSeed(spec.Seed, id),
		Shutdown:   spec.Shutdown.Shutdown,
	}, "127.0.0.1:"+strconv.Itoa(sidePort))
	if err != nil {
		return app, side, err
	}
	side = testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:              p.image,
			Name:               fmt.Sprintf("lbchaos-%s-%d-%d-sidecar", p.runID, seq, id),
			Cmd:                flags.Args(),
			Env:                p.serveEnv(),
			Labels:             labels("sidecar"),
			HostConfigModifier: host,
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	}
	return app, side, nil
}

// startAppFleet starts spec.Count instances of spec.App, each with its
// sidecar, concurrently, and returns when every sidecar answers its health
// check, which it forwards to the app's health path. On error every
// container created is removed.
func (p *Provider) startAppFleet(ctx context.Context, spec fleet.Spec, seq int) (*dockerFleet, error) {
	if err := p.CheckApp(ctx, spec.App); err != nil {
		return nil, fmt.Errorf("docker backends: %w", err)
	}
	// All at once: ports asked for one after the other may repeat.
	ports, err := fleet.FreeLoopbackPorts(2 * spec.Count)
	if err != nil {
		return nil, fmt.Errorf("docker backends: free ports on 127.0.0.1: %w", err)
	}
	return p.startEach(ctx, spec, seq, 2, func(ctx context.Context, id int, ctrs []testcontainers.Container) (*dockerInstance, fleet.Backend, error) {
		fail := func(err error) (*dockerInstance, fleet.Backend, error) { return nil, fleet.Backend{}, err }
		appPort, sidePort := ports[2*id], ports[2*id+1]
		areq, sreq, err := p.appRequests(spec, seq, id, appPort, sidePort)
		if err != nil {
			return fail(fmt.Errorf("instance %d: %w", id, err))
		}
		a, err := testcontainers.GenericContainer(ctx, areq)
		ctrs[0] = a
		if err != nil {
			return fail(fmt.Errorf("instance %d: starting image %s: %w%s", id, spec.App.Image, err, p.logTail(a)))
		}
		sc, err := testcontainers.GenericContainer(ctx, sreq)
		ctrs[1] = sc
		if err != nil {
			return fail(fmt.Errorf("instance %d: starting its sidecar: %w%s", id, err, p.logTail(sc)))
		}
		in := &dockerInstance{id: id, ctr: a, side: sc, port: sidePort, appPort: appPort}
		b, err := p.backendOf(ctx, in)
		if err != nil {
			return fail(p.appNotHealthy(in, spec.App, err))
		}
		return in, b, nil
	})
}

// appNotHealthy is the error of an app instance whose sidecar's health
// check (forwarded to the app) did not pass: it quotes the end of the
// app's log, and the sidecar's when the sidecar itself stopped.
func (p *Provider) appNotHealthy(in *dockerInstance, app *experiments.App, err error) error {
	msg := fmt.Errorf("instance %d: image %s did not become healthy (GET http://127.0.0.1:%d%s through its sidecar on 127.0.0.1:%d): %w%s",
		in.id, app.Image, in.appPort, app.Health, in.port, err, p.logTail(in.ctr))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st, serr := in.side.State(ctx); serr == nil && !st.Running {
		msg = fmt.Errorf("%w\nits sidecar stopped (exit code %d)%s", msg, st.ExitCode, p.logTail(in.side))
	}
	return msg
}

// restartApp restarts in's app container (instances.app.restart) and
// waits until it answers through its sidecar again.
func (f *dockerFleet) restartApp(ctx context.Context, in *dockerInstance) error {
	zero := 0
	if _, err := f.p.cli.ContainerRestart(ctx, in.ctr.GetContainerID(), client.ContainerRestartOptions{Timeout: &zero}); err != nil {
		return fmt.Errorf("docker backends: restart instance %d's app: %w", in.id, err)
	}
	if err := f.republish(ctx, in); err != nil {
		return f.p.appNotHealthy(in, f.spec.App, err)
	}
	return nil
}

// waitApp polls the health check of in's sidecar at base, which forwards it
// to the app, until it answers or timeout passes. It gives up early when
// the app's or the sidecar's container stops.
func waitApp(ctx context.Context, in *dockerInstance, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctl := &faultyserver.Client{BaseURL: base}
	for i := 0; ; i++ {
		err := ctl.Healthy(ctx)
		if err == nil {
			return nil
		}
		if i%10 == 9 {
			for what, c := range map[string]testcontainers.Container{"the app": in.ctr, "the sidecar": in.side} {
				if st, serr := c.State(ctx); serr == nil && !st.Running && !st.Paused {
					return fmt.Errorf("%s exited (code %d) before answering: %w", what, st.ExitCode, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy within %v: %w", timeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

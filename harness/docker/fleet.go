package docker

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
	"golang.org/x/sync/errgroup"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// backendPort is the port lbchaos serve listens on inside a container.
const backendPort = "8080/tcp"

// containerStopTimeout is the grace period of a container being removed.
const containerStopTimeout = 0 * time.Second

// startMargin is the time a fleet's start may take beyond the readiness
// timeout (creating the containers, publishing their ports).
const startMargin = 30 * time.Second

// drainTimeout bounds a reused instance's wait for the requests of the
// previous fleet to leave it.
const drainTimeout = 2 * time.Second

// maxLogTail bounds the container output quoted in an error.
const maxLogTail = 4 << 10

// dockerInstance is one backend container. mu serialises the chaos
// operations on it; the flags record what must be undone before reuse.
type dockerInstance struct {
	id   int
	ctr  testcontainers.Container // the server, or with instances.app the app
	port int                      // host-network mode: the 127.0.0.1 port the server (or sidecar) listens on
	// side is the sidecar in front of an app (instances.app), listening on
	// port; nil for a fake server. appPort is the app's own port.
	side    testcontainers.Container
	appPort int

	mu         sync.Mutex
	paused     bool
	killed     bool
	cpuLimited bool

	// expectExit counts the exits of ctr the harness caused and Watch has
	// not seen yet (a scheduled kill); crashed is set when Watch saw ctr
	// exit on its own, so that a reuse starts it again.
	expectExit atomic.Int32
	crashed    atomic.Bool
}

// dockerFleet is a Fleet of containers. Its Backends may change
// (Restart); insts is immutable.
type dockerFleet struct {
	fleet.Addresses
	p     *Provider
	spec  fleet.Spec
	insts []*dockerInstance
}

var (
	_ fleet.Fleet             = (*dockerFleet)(nil)
	_ faultyserver.Containers = (*dockerFleet)(nil)
)

// serveArgs are the arguments of `lbchaos serve` (the image's entry point)
// for instance id.
func serveArgs(spec fleet.Spec, id int, listen string) ([]string, error) {
	f, err := faultyserver.FlagsOf(spec.ServerConfig(id), listen)
	if err != nil {
		return nil, err
	}
	return f.Args(), nil
}

// readiness is the wait strategy of a starting backend container.
func (p *Provider) readiness() wait.Strategy {
	return wait.ForHTTP(faultyserver.HealthPath).
		WithPort(backendPort).
		WithForcedIPv4LocalHost().
		WithPollInterval(20 * time.Millisecond).
		WithStartupTimeout(p.opts.StartTimeout)
}

func (p *Provider) request(spec fleet.Spec, seq, id, port int) (testcontainers.GenericContainerRequest, error) {
	listen := ":8080"
	if p.opts.HostNetwork {
		listen = "127.0.0.1:" + strconv.Itoa(port)
	}
	args, err := serveArgs(spec, id, listen)
	if err != nil {
		return testcontainers.GenericContainerRequest{}, err
	}
	req := testcontainers.ContainerRequest{
		Image:  p.image,
		Name:   fmt.Sprintf("lbchaos-%s-%d-%d", p.runID, seq, id),
		Cmd:    args,
		Env:    p.serveEnv(),
		Labels: map[string]string{LabelRun: p.runID, LabelOwner: p.owner, labelFleet: strconv.Itoa(seq)},
	}
	if p.opts.HostNetwork {
		// Readiness is checked by the fleet on the known port: there is no
		// published port for the library's wait strategies to map.
		req.HostConfigModifier = func(hc *container.HostConfig) { hc.NetworkMode = "host" }
	} else {
		req.ExposedPorts = []string{backendPort}
		req.HostConfigModifier = func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort(backendPort): {{HostIP: netip.AddrFrom4([4]byte{127, 0, 0, 1}), HostPort: "0"}},
			}
		}
		req.WaitingFor = p.readiness()
	}
	return testcontainers.GenericContainerRequest{
		ContainerRequest: req,
		Started:          true,
		Logger:           tclog.NewNoopLogger(),
	}, nil
}

// startFleet starts spec.Count containers concurrently. On error every
// container created is removed.
func (p *Provider) startFleet(ctx context.Context, spec fleet.Spec, seq int) (*dockerFleet, error) {
	if spec.Count <= 0 {
		return nil, fmt.Errorf("docker backends: %d instances", spec.Count)
	}
	if spec.App != nil {
		return p.startAppFleet(ctx, spec, seq)
	}
	var ports []int
	if p.opts.HostNetwork {
		// All at once: ports asked for one after the other may repeat.
		var err error
		if ports, err = fleet.FreeLoopbackPorts(spec.Count); err != nil {
			return nil, fmt.Errorf("docker backends: free ports on 127.0.0.1: %w", err)
		}
	}
	return p.startEach(ctx, spec, seq, 1, func(ctx context.Context, id int, ctrs []testcontainers.Container) (*dockerInstance, fleet.Backend, error) {
		port := 0
		if p.opts.HostNetwork {
			port = ports[id]
		}
		req, err := p.request(spec, seq, id, port)
		if err != nil {
			return nil, fleet.Backend{}, fmt.Errorf("instance %d: %w", id, err)
		}
		c, err := testcontainers.GenericContainer(ctx, req)
		ctrs[0] = c
		if err != nil {
			return nil, fleet.Backend{}, fmt.Errorf("instance %d: %w%s", id, err, p.logTail(c))
		}
		in := &dockerInstance{id: id, ctr: c, port: port}
		b, err := p.backendOf(ctx, in)
		if err != nil {
			return nil, fleet.Backend{}, fmt.Errorf("instance %d: %w%s", id, err, p.logTail(c))
		}
		return in, b, nil
	})
}

// startEach starts spec.Count instances at once, each by start, which
// records the containers it creates in ctrs (perInstance of them) and
// returns the instance with its address. It bounds the whole by the start
// timeout; on any error it removes every container created.
func (p *Provider) startEach(ctx context.Context, spec fleet.Spec, seq, perInstance int,
	start func(ctx context.Context, id int, ctrs []testcontainers.Container) (*dockerInstance, fleet.Backend, error)) (*dockerFleet, error) {
	f := &dockerFleet{p: p, spec: spec, insts: make([]*dockerInstance, spec.Count)}
	backends := make([]fleet.Backend, spec.Count)
	// The images are local: nothing here may wait on a pull, which the
	// library retries for minutes.
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout+startMargin)
	defer cancel()
	ctrs := make([]testcontainers.Container, perInstance*spec.Count)
	g, gctx := errgroup.WithContext(ctx)
	for id := range spec.Count {
		g.Go(func() error {
			in, b, err := start(gctx, id, ctrs[id*perInstance:(id+1)*perInstance])
			if err != nil {
				return err
			}
			f.insts[id] = in
			backends[id] = b
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		terminateAll(p.cli, ctrs)
		p.removeFleet(seq)
		return nil, fmt.Errorf("docker backends: %w", err)
	}
	f.SetAll(backends)
	return f, nil
}

// backendOf returns in's address: its published port, or in host-network
// mode its own port once it answers its health check.
func (p *Provider) backendOf(ctx context.Context, in *dockerInstance) (fleet.Backend, error) {
	var u *url.URL
	if p.opts.HostNetwork {
		u = &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(in.port)}
		wait := fleet.WaitHealthy
		if in.side != nil {
			wait = func(ctx context.Context, base string, timeout time.Duration) error {
				return waitApp(ctx, in, base, timeout)
			}
		}
		if err := wait(ctx, u.String(), p.opts.StartTimeout); err != nil {
			return fleet.Backend{}, err
		}
	} else {
		port, err := in.ctr.MappedPort(ctx, backendPort)
		if err != nil {
			return fleet.Backend{}, fmt.Errorf("published port: %w", err)
		}
		u = &url.URL{Scheme: "http", Host: "127.0.0.1:" + port.Port()}
	}
	return fleet.Backend{ID: in.id, URL: u, Control: &faultyserver.Client{BaseURL: u.String(), Token: p.opts.Token}}, nil
}

// logTail returns the end of c's output, formatted to follow an error, or
// "" when there is none.
func (p *Provider) logTail(c testcontainers.Container) string {
	if c == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := c.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "; the container wrote nothing"
	}
	if len(s) > maxLogTail {
		s = "…" + s[len(s)-maxLogTail:]
	}
	return "; container output:\n" + s
}

// terminateAll removes every non-nil container, concurrently, within a
// fresh timeout.
func terminateAll(cli client.APIClient, ctrs []testcontainers.Container) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerCleanupTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range ctrs {
		if c == nil {
			continue
		}
		wg.Go(func() { terminateContainer(ctx, cli, c) })
	}
	wg.Wait()
}

// labelFleet tells apart the fleets of one run (their sequence number).
const labelFleet = "io.lbchaos.fleet"

// removeFleet force-removes every container of fleet seq of this run,
// including ones whose creation the engine finished after a cancelled
// request returned without a handle. It looks three times, a moment apart,
// for creations still landing.
func (p *Provider) removeFleet(seq int) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerCleanupTimeout)
	defer cancel()
	want := strconv.Itoa(seq)
	match := func(l map[string]string) bool { return l[LabelRun] == p.runID && l[labelFleet] == want }
	for i := range 3 {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		_, _ = removeLabelled(ctx, p.cli, io.Discard, match)
	}
}

// terminateContainer removes c, thawing it first: a paused container
// cannot be stopped. What Terminate fails to remove is force-removed.
func terminateContainer(ctx context.Context, cli client.APIClient, c testcontainers.Container) {
	id := c.GetContainerID()
	if st, err := c.State(ctx); err == nil && st.Paused {
		_, _ = cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	if err := c.Terminate(ctx, testcontainers.StopTimeout(containerStopTimeout)); err != nil {
		_, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
}

// Close implements Fleet: the containers are removed, or with
// Options.Reuse released to the provider for the next Start.
func (f *dockerFleet) Close() error {
	if f.MarkClosed() {
		f.p.pool.Release(f)
	}
	return nil
}

// closeQuiet closes f, if not yet closed, and removes its containers.
func (f *dockerFleet) closeQuiet() {
	f.MarkClosed()
	f.Terminate()
}

// Terminate removes f's containers.
func (f *dockerFleet) Terminate() {
	ctrs := make([]testcontainers.Container, 0, 2*len(f.insts))
	for _, in := range f.insts {
		ctrs = append(ctrs, in.ctr)
		if in.side != nil {
			ctrs = append(ctrs, in.side)
		}
	}
	terminateAll(f.p.cli, ctrs)
}

// Spec implements fleet.Reusable.
func (f *dockerFleet) Spec() fleet.Spec { return f.spec }

// Reuse implements fleet.Reusable: it resets f's containers and returns a
// new open fleet over them, which f (closed) gives up.
func (f *dockerFleet) Reuse(ctx context.Context) (*dockerFleet, error) {
	if err := f.reset(ctx); err != nil {
		return nil, err
	}
	g := &dockerFleet{p: f.p, spec: f.spec, insts: f.insts}
	g.SetAll(f.Backends())
	return g, nil
}

// inst returns instance id, or an error when f is closed or has no such
// instance.
func (f *dockerFleet) inst(id int) (*dockerInstance, error) {
	if err := f.Usable(id); err != nil {
		return nil, fmt.Errorf("docker backends: %w", err)
	}
	return f.insts[id], nil
}

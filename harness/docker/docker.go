package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/owner"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels and names of what the Docker provider creates. Every container and
// network it creates carries LabelRun and LabelOwner; the sweeps act on
// nothing else.
const (
	// LabelRun's value is the run id (Provider.RunID).
	LabelRun = "io.lbchaos.run"
	// LabelOwner's value identifies the creating process:
	// "<hostname>/<pid>/<start time in clock ticks after boot>".
	LabelOwner = "io.lbchaos.owner"
	// BackendImageRepo is the repository of the backend image BuildImage
	// tags.
	BackendImageRepo = "lbchaos-backend"
)

// Options configure a Provider.
type Options struct {
	// Binary is the static linux lbchaos binary copied into the image;
	// "" means the running executable.
	Binary string
	// RunID labels everything this provider creates; "" generates a random
	// one.
	RunID string
	// StartTimeout bounds each container's wait for its health check
	// (default 30 s).
	StartTimeout time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Reuse lets Start hand back the containers of the previous fleet, once
	// it is closed, for an identical fleet.Spec, instead of starting new
	// ones: each is unpaused, its CPU limit lifted, started again if it was
	// killed, its server reset through the control API (fault cleared,
	// counters zeroed) and found empty of requests. The server processes
	// are reset through their control API, which also reseeds their random
	// source, so they draw the same service times a new fleet would.
	// Close on such a fleet releases its containers to the provider;
	// Provider.Close removes them.
	Reuse bool
	// HostNetwork runs the containers in the host's network namespace, each
	// server listening on its own 127.0.0.1 port, instead of publishing
	// 8080/tcp through the engine's port forwarding. On engines whose
	// forwarding is the userland docker-proxy this removes a user-space copy
	// of every byte (see docs/performance-log.md). Linux engines
	// only; the default, published ports, works everywhere.
	HostNetwork bool
	// Token is the control token of every server and sidecar the provider
	// starts, given to each container in its environment (TokenEnv), never
	// on its command line; "" makes New generate a random one.
	Token string
	// Env is added to the environment of every server and sidecar
	// container, over the Go runtime settings the provider gives them
	// (serveTuning: GOMAXPROCS=1), e.g. {"GOMAXPROCS": "2"} or a GODEBUG.
	// The user's app containers (instances.app) take theirs from the
	// experiment.
	Env map[string]string
}

// Timeouts of the provider's own Docker calls.
const (
	dockerPingTimeout    = 10 * time.Second
	dockerCleanupTimeout = 30 * time.Second
	defaultStartTimeout  = 30 * time.Second
)

var tcEnvOnce sync.Once

// setTestcontainersEnv configures testcontainers, before its configuration
// is first read, for an engine on this host that reaches no registry: the
// reaper (Ryuk), whose image would be pulled, is disabled; published ports
// are reached on 127.0.0.1, where they are bound (left alone, the library
// would use the bridge gateway when it finds itself in a container); image
// builds read no Docker credentials unless DOCKER_AUTH_CONFIG is set; the
// library's own log lines are dropped (progress goes to Options.Log).
func setTestcontainersEnv() {
	tcEnvOnce.Do(func() {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		if _, ok := os.LookupEnv("DOCKER_AUTH_CONFIG"); !ok {
			_ = os.Setenv("DOCKER_AUTH_CONFIG", "{}")
		}
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// ErrNoDocker is wrapped by the errors of Available and
// New when no Docker daemon answered.
var ErrNoDocker = errors.New("no Docker daemon answered")

// Available returns nil when a Docker daemon answers a ping. Its error
// wraps ErrNoDocker and says what to do about it.
func Available(ctx context.Context) error {
	cli, err := newDockerClient(ctx)
	if err != nil {
		return err
	}
	return cli.Close()
}

// newDockerClient connects to the daemon testcontainers resolves (DOCKER_HOST,
// the Docker context, the default socket) and pings it.
func newDockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	setTestcontainersEnv()
	ctx, cancel := context.WithTimeout(ctx, dockerPingTimeout)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		if _, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			_ = cli.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%v): start dockerd, or point DOCKER_HOST at a running daemon, or use --backends process", ErrNoDocker, err)
	}
	return cli, nil
}

// newTCProvider returns a testcontainers provider after checking, within
// ctx, that the daemon answers. Close it after use.
func newTCProvider(ctx context.Context) (*testcontainers.DockerProvider, error) {
	cli, err := newDockerClient(ctx)
	if err != nil {
		return nil, err
	}
	_ = cli.Close()
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return nil, fmt.Errorf("%w (%v): start dockerd, or point DOCKER_HOST at a running daemon, or use --backends process", ErrNoDocker, err)
	}
	return p, nil
}

// Provider runs every backend in its own container of the image
// BuildImage makes, published on 127.0.0.1. For a spec with
// Instances.App it runs instead the user's image as every instance, each
// with a sidecar container of the backend image in front of it (see
// CheckApp). Its fleets implement faultyserver.Containers. Create it with
// New and Close it when done.
type Provider struct {
	opts  Options
	runID string
	owner string
	image string
	ncpu  int // the engine's CPUs; NanoCPUs may not exceed ncpu×1e9
	tc    *testcontainers.DockerProvider
	cli   client.APIClient

	pool fleet.Pool[*dockerFleet] // fleets handed out, and the one kept for reuse
}

var (
	_ fleet.Provider          = (*Provider)(nil)
	_ fleet.ContainerProvider = (*Provider)(nil)
)

// New checks that the daemon answers, removes what dead runs
// left behind (SweepStale), and builds or reuses the backend image.
func New(ctx context.Context, opts Options) (*Provider, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.Token == "" {
		opts.Token = faultyserver.NewToken()
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("docker backends: locating the lbchaos binary: %w", err)
		}
		opts.Binary = exe
	}
	runID, err := owner.RunID(opts.RunID)
	if err != nil {
		return nil, fmt.Errorf("docker backends: %w", err)
	}
	who, err := owner.Self()
	if err != nil {
		return nil, fmt.Errorf("docker backends: %w", err)
	}
	tc, err := newTCProvider(ctx)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		opts:  opts,
		runID: runID,
		owner: who,
		tc:    tc,
		cli:   tc.Client(),
	}
	p.pool.Reuse, p.pool.Name, p.pool.Things, p.pool.Log = opts.Reuse, "docker backends", "containers", opts.Log
	ok := false
	defer func() {
		if !ok {
			_ = tc.Close()
		}
	}()
	info, err := p.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker backends: engine info: %w", err)
	}
	p.ncpu = info.Info.NCPU
	if _, err := sweep(ctx, p.cli, opts.Log, staleOnly); err != nil {
		// Leftovers of other runs do not stop this one; the next start
		// tries again.
		fmt.Fprintf(p.opts.Log, "docker: warning: leftovers of dead runs not all removed: %v\n", err)
	}
	if p.image, err = buildBinaryImage(ctx, tc, opts.Binary, BackendImageRepo, opts.Log); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

// Name implements Provider.
func (p *Provider) Name() string { return "docker" }

// HostPorts implements fleet.HostPortProvider: every instance is reached
// on a 127.0.0.1 port, published through the engine's userland proxy or in
// the host's network, where network faults act.
func (p *Provider) HostPorts() (bool, string) { return true, "" }

// ContainerFaults implements ContainerProvider: fleets implement
// faultyserver.Containers.
func (p *Provider) ContainerFaults() bool { return true }

// RunID returns the value of LabelRun on everything this provider creates.
func (p *Provider) RunID() string { return p.runID }

// Image returns the backend image reference the containers run.
func (p *Provider) Image() string { return p.image }

// Start implements Provider: it starts spec.Count containers at once and
// returns when every one answers its health check. On error none is left
// running. With Options.Reuse it may instead hand back the released
// containers of the previous fleet, reset as documented there.
func (p *Provider) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	t0 := time.Now()
	f, reused, err := p.pool.Start(ctx, spec, func(seq int) (*dockerFleet, error) { return p.startFleet(ctx, spec, seq) })
	if err != nil {
		return nil, err
	}
	took := time.Since(t0).Round(time.Millisecond)
	switch {
	case reused && spec.App != nil:
		fmt.Fprintf(p.opts.Log, "docker: reset %d instances of run %s in %v\n", len(f.insts), p.runID, took)
	case reused:
		fmt.Fprintf(p.opts.Log, "docker: reset %d containers of run %s in %v\n", len(f.insts), p.runID, took)
	case spec.App != nil:
		fmt.Fprintf(p.opts.Log, "docker: started %d instances of %s, each with its sidecar, of run %s in %v\n", len(f.insts), spec.App.Image, p.runID, took)
	default:
		fmt.Fprintf(p.opts.Log, "docker: started %d containers of run %s in %v\n", len(f.insts), p.runID, took)
	}
	return f, nil
}

// Close removes every container and network labelled with this run's id,
// those of open fleets included, and releases the client. It is
// idempotent; when ctx is already done it uses a fresh short timeout.
func (p *Provider) Close(ctx context.Context) error {
	fleets, ok := p.pool.Close()
	if !ok {
		return nil
	}

	for _, f := range fleets {
		f.closeQuiet()
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), dockerCleanupTimeout)
		defer cancel()
	}
	n, err := removeLabelled(ctx, p.cli, p.opts.Log, func(labels map[string]string) bool {
		return labels[LabelRun] == p.runID
	})
	if n > 0 {
		fmt.Fprintf(p.opts.Log, "docker: removed %d leftover objects of run %s\n", n, p.runID)
	}
	return errors.Join(err, p.tc.Close())
}

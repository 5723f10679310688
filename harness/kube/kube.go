// Package kube runs every backend instance as a pod of a Kubernetes
// cluster (`--backends kube`), through client-go.
//
// Each run gets a namespace of its own, lbchaos-<run id>, labelled with the
// run id and its owner process as the Docker provider labels its
// containers; Close deletes it (and so every pod), and New deletes the
// namespaces of owners of this host that are gone (runs that were killed).
//
// An instance is one bare pod (restartPolicy Never) running `lbchaos serve`
// from the backend image, with a small CPU request and a CPU limit; with
// instances.app, the user's image and an lbchaos sidecar in front of it.
// It is ready when its control API's health check answers. Two ways to reach the
// pods:
//
//   - NetworkHost: hostNetwork pods, each server on its own 127.0.0.1 port,
//     as the Docker provider's host network. For a cluster whose node is
//     this machine (the local cluster of `make kube-up`): load and faults
//     stay on loopback.
//   - NetworkPod: each server on :8080 of its pod IP. For lbchaos running
//     where pod IPs are routed (inside the cluster, or on a node).
//
// Container faults (faultyserver.Containers) map to what Kubernetes offers:
// kill deletes the pod with grace period 0 and waits until its address
// refuses connections; restart creates the same pod again (same name, same
// port) and waits until it answers; cpu changes the container's CPU limit
// in place through the pods/resize subresource; pause has no Kubernetes
// verb: an ephemeral container, in a pod that shares its process namespace,
// sends SIGSTOP (SIGCONT to unpause) to the server process. Unlike Docker's
// pause (the cgroup freezer) the pod's kernel side still completes TCP
// handshakes into the listen backlog and the kubelet keeps reporting the pod
// Running and Ready; the requests hang all the same.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/owner"
)

// Labels and annotations of what the provider creates. Every namespace
// carries LabelRun and AnnotationOwner; the sweeps act on nothing else.
const (
	// LabelRun's value is the run id; the same key as the Docker provider's.
	LabelRun = "io.lbchaos.run"
	// LabelOwner is the owner (see AnnotationOwner) with '/' spelled '_',
	// for selecting by hand; absent when that is no valid label value.
	LabelOwner = "io.lbchaos.owner"
	// AnnotationOwner names the creating process:
	// "<hostname>/<pid>/<start time in clock ticks after boot>".
	AnnotationOwner = "io.lbchaos.owner"
	// labelFleet and labelInstance tell a run's pods apart.
	labelFleet    = "io.lbchaos.fleet"
	labelInstance = "io.lbchaos.instance"
)

// Network says how lbchaos reaches the pods.
type Network string

const (
	// NetworkAuto is NetworkHost when the API server is on a loopback
	// address (a cluster on this machine), else NetworkPod.
	NetworkAuto Network = "auto"
	// NetworkHost runs hostNetwork pods, each on its own 127.0.0.1 port.
	NetworkHost Network = "host"
	// NetworkPod reaches each pod on its pod IP, port 8080.
	NetworkPod Network = "pod"
)

// Defaults of Options.
const (
	DefaultCPURequest    = "10m"
	defaultStartTimeout  = 60 * time.Second
	defaultDeleteTimeout = 90 * time.Second
	// liftedCPU is the CPU limit of a pod that is not throttled. A resize
	// cannot drop a limit (that would change the pod's QoS class), so
	// "no limit" is one above any node's CPUs.
	liftedCPU = "64"
)

// Options configure a Provider.
type Options struct {
	// Kubeconfig is the kubeconfig file; "" means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account.
	Kubeconfig string
	// Config, when set, is used instead of any kubeconfig (tests).
	Config *rest.Config
	// Image is the backend image the pods run (lbchaos, entry point
	// `lbchaos serve`). The cluster's nodes must have it or pull it.
	Image string
	// PullPolicy of the backend pods' containers (default IfNotPresent).
	PullPolicy corev1.PullPolicy
	// Network (default NetworkAuto).
	Network Network
	// CPURequest of each pod (default DefaultCPURequest: a hundred pods
	// fit on a node of two CPUs).
	CPURequest string
	// SharePIDs runs the pods with a shared process namespace, which the
	// pause fault needs (see the package comment).
	SharePIDs bool
	// RunID names the namespace; "" generates a random one.
	RunID string
	// StartTimeout bounds a fleet's wait until every pod answers (default
	// 60 s).
	StartTimeout time.Duration
	// DeleteTimeout bounds Close's wait until the namespace is gone
	// (default 90 s); negative: Close does not wait.
	DeleteTimeout time.Duration
	// Reuse lets Start hand back the pods of the previous fleet, once it is
	// closed, for an identical fleet.Spec: each is unpaused, its CPU limit
	// lifted, created again if it was killed, and its server reset through
	// the control API, as the Docker provider does.
	Reuse bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Service runs the fleets behind a Service each, on the pod network
	// (service.go): kube:service then sends to the Service, and every
	// strategy's load comes from generator pods.
	Service bool
	// ServiceRules, when set, reports whether kube-proxy has written the
	// rules of Service namespace/name (the local cluster's check); a new
	// Service's fleet is ready only once it has.
	ServiceRules func(namespace, name string) (bool, string)
	// Token is the control token of every server and sidecar, kept in the
	// namespace's Secret ControlSecret (secret.go); "" makes New generate a
	// random one.
	Token string
}

// Provider runs backends as pods in a namespace of its own. Create it with
// New and Close it when done.
type Provider struct {
	opts    Options
	cs      *api
	cfg     *rest.Config
	host    string // the API server, for messages
	network Network
	request resource.Quantity
	runID   string
	owner   string
	ns      string
	pool    fleet.Pool[*kubeFleet]
	fwd     *forwarder // Service mode: the control API's way in

	discOnce sync.Once
	disc     *api
	discErr  error
}

// discovery is a client of the discovery.k8s.io/v1 API, made on first use.
func (p *Provider) discovery() (*api, error) {
	p.discOnce.Do(func() { p.disc, p.discErr = newDiscoveryAPI(p.cfg) })
	return p.disc, p.discErr
}

var (
	_ fleet.Provider          = (*Provider)(nil)
	_ fleet.ContainerProvider = (*Provider)(nil)
	_ fleet.AppProvider       = (*Provider)(nil)
)

// ErrNoCluster is wrapped by the errors of New, Available and the sweeps when
// no API server answered or no kubeconfig was found.
var ErrNoCluster = errors.New("no Kubernetes API server answered")

// apiTimeout bounds the first call to the API server.
const apiTimeout = 10 * time.Second

// connect returns a client of the cluster opts name (Kubeconfig or Config)
// after checking that its API server answers, and the server's address.
func connect(ctx context.Context, opts Options) (*api, *rest.Config, error) {
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = restConfig(opts.Kubeconfig); err != nil {
			return nil, nil, err
		}
	} else {
		cfg = rest.CopyConfig(cfg)
	}
	// A hundred pods are created, polled and deleted at once; client-go's
	// default of 5 requests per second would take minutes.
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := newAPI(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kube backends: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	// Any answer of the API server's own (even a refusal, which later
	// calls report in full) means it is there.
	var answer apierrors.APIStatus
	if _, err := cs.getNamespace(pctx, "default"); err != nil && !errors.As(err, &answer) {
		return nil, nil, fmt.Errorf("%w at %s (%v): start a cluster (make kube-up), or point --kubeconfig or KUBECONFIG at a running one", ErrNoCluster, cfg.Host, err)
	}
	return cs, cfg, nil
}

// Available returns nil when the cluster kubeconfig names answers.
func Available(ctx context.Context, kubeconfig string) error {
	_, _, err := connect(ctx, Options{Kubeconfig: kubeconfig})
	return err
}

// restConfig loads the kubeconfig: path, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster configuration.
// Server returns the API server's URL of the cluster kubeconfig names
// (resolved as New resolves it: "" means $KUBECONFIG, then
// ~/.kube/config, then the in-cluster account).
func Server(kubeconfig string) (string, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return "", err
	}
	return cfg.Host, nil
}

func restConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err == nil {
		return cfg, nil
	}
	if path == "" && clientcmd.IsEmptyConfig(err) {
		if in, ierr := rest.InClusterConfig(); ierr == nil {
			return in, nil
		}
		return nil, fmt.Errorf("%w: no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config) and not inside a cluster; start one with make kube-up and export the KUBECONFIG it prints", ErrNoCluster)
	}
	what := "the kubeconfig"
	if path != "" {
		what = "--kubeconfig " + path
	}
	return nil, fmt.Errorf("%w: %s: %v", ErrNoCluster, what, err)
}

// ResolveNetwork returns n, or for NetworkAuto NetworkHost when the API
// server at host (a URL or host:port) is on a loopback address, else
// NetworkPod.
func ResolveNetwork(n Network, host string) (Network, error) {
	switch n {
	case NetworkHost, NetworkPod:
		return n, nil
	case NetworkAuto, "":
	default:
		return "", fmt.Errorf("network %q: want auto, host or pod", n)
	}
	h := host
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		h = u.Hostname()
	} else if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return NetworkHost, nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return NetworkHost, nil
	}
	return NetworkPod, nil
}

// New connects to the cluster, deletes the namespaces that runs of this
// host left behind when they were killed (SweepStale), and creates this
// run's namespace.
func New(ctx context.Context, opts Options) (*Provider, error) {
	if opts.Image == "" {
		return nil, errors.New("kube backends: no backend image given")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.DeleteTimeout == 0 {
		opts.DeleteTimeout = defaultDeleteTimeout
	}
	if opts.PullPolicy == "" {
		opts.PullPolicy = corev1.PullIfNotPresent
	}
	if opts.CPURequest == "" {
		opts.CPURequest = DefaultCPURequest
	}
	if opts.Token == "" {
		opts.Token = faultyserver.NewToken()
	}
	req, err := resource.ParseQuantity(opts.CPURequest)
	if err != nil || req.Sign() <= 0 {
		return nil, fmt.Errorf("kube backends: cpu request %q: want a positive CPU quantity such as 10m or 0.1", opts.CPURequest)
	}
	cs, cfg, err := connect(ctx, opts)
	if err != nil {
		return nil, err
	}
	network, err := ResolveNetwork(opts.Network, cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("kube backends: %w", err)
	}
	if opts.Service {
		// A Service's pods are on the pod network; the API server is the
		// way in to their control API.
		if opts.Network == NetworkHost {
			return nil, errors.New("kube backends: a Service selects pods on the pod network: --kube-network host does not apply (leave it out)")
		}
		network = NetworkPod
	}
	runID, err := owner.RunID(opts.RunID)
	if err != nil {
		return nil, fmt.Errorf("kube backends: %w", err)
	}
	who, err := owner.Self()
	if err != nil {
		return nil, fmt.Errorf("kube backends: %w", err)
	}
	p := &Provider{
		opts:    opts,
		cs:      cs,
		cfg:     cfg,
		host:    cfg.Host,
		network: network,
		request: req,
		runID:   runID,
		owner:   who,
		ns:      NamespacePrefix + runID,
	}
	if opts.Service {
		p.fwd = &forwarder{cfg: cfg, ns: p.ns}
	}
	p.pool.Reuse, p.pool.Name, p.pool.Things, p.pool.Log = opts.Reuse, "kube backends", "pods", opts.Log
	if _, err := sweep(ctx, cs, opts.Log, staleOnly); err != nil {
		// Leftovers of other runs do not stop this one; the next start
		// tries again.
		fmt.Fprintf(opts.Log, "kube: warning: leftovers of dead runs not all removed: %v\n", err)
	}
	if err := p.createNamespace(ctx); err != nil {
		return nil, err
	}
	if err := p.createControlSecret(ctx); err != nil {
		_ = deleteNamespace(context.WithoutCancel(ctx), cs, p.ns)
		return nil, err
	}
	fmt.Fprintf(opts.Log, "kube: namespace %s on %s (%s network, image %s)\n", p.ns, p.host, p.network, opts.Image)
	return p, nil
}

// Name implements fleet.Provider.
func (p *Provider) Name() string { return "kube" }

// HostPorts implements fleet.HostPortProvider: a pod listens in a network
// namespace of its own, out of reach of this host's packet filter.
func (p *Provider) HostPorts() (bool, string) { return false, "kube pods have their own" }

// ContainerFaults implements fleet.ContainerProvider.
func (p *Provider) ContainerFaults() bool { return true }

// RunsApps implements fleet.AppProvider: with instances.app each pod runs
// the user's image and an lbchaos sidecar in front of it, sharing the
// pod's network; container faults act on the app's container.
func (p *Provider) RunsApps() bool { return true }

// CheckApp reports why app (nil: none) cannot run on this provider: in
// NetworkHost mode every app shares the node's ports, so it must take its
// port from app.port_env. Whether the nodes have its image shows when its
// pods start.
func (p *Provider) CheckApp(app *experiments.App) error {
	if app != nil && p.network == NetworkHost && app.PortEnv == "" {
		return fmt.Errorf("instances.app: hostNetwork pods (--kube-network host) share the node's ports, so each instance of %s needs its own: give instances.app.port_env, or run with --kube-network pod", app.Image)
	}
	return nil
}

// RunID returns the run id, the value of LabelRun.
func (p *Provider) RunID() string { return p.runID }

// Namespace returns the run's namespace.
func (p *Provider) Namespace() string { return p.ns }

// Network returns how the pods are reached.
func (p *Provider) Network() Network { return p.network }

// Start implements fleet.Provider: it creates spec.Count pods at once and
// returns when every one answers its health check. On error it deletes
// the pods it created. With Options.Reuse it may instead hand back the
// released pods of the previous fleet, reset.
func (p *Provider) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	if err := p.CheckApp(spec.App); err != nil {
		return nil, fmt.Errorf("kube backends: %w", err)
	}
	if len(spec.External) > 0 {
		return nil, errors.New("kube backends: instances.external lists instances that already run; use --backends external")
	}
	t0 := time.Now()
	f, reused, err := p.pool.Start(ctx, spec, func(seq int) (*kubeFleet, error) { return p.startFleet(ctx, spec, seq) })
	if err != nil {
		return nil, err
	}
	what := "started %d pods in namespace %s"
	if reused {
		what = "reset %d pods in namespace %s"
	}
	fmt.Fprintf(p.opts.Log, "kube: "+what+" in %v\n", spec.Count, p.ns, time.Since(t0).Round(time.Millisecond))
	return f, nil
}

// cleanupTimeout bounds Close's API calls when the caller's context is
// already done (Ctrl-C).
const cleanupTimeout = 30 * time.Second

// Close deletes the run's namespace, and with it every pod, and waits
// (Options.DeleteTimeout) until it is gone. It is idempotent; when ctx is
// already done it uses a fresh timeout.
func (p *Provider) Close(ctx context.Context) error {
	fleets, ok := p.pool.Close()
	if !ok {
		return nil
	}
	for _, f := range fleets {
		f.MarkClosed() // their pods go with the namespace
		if f.deploy != nil {
			f.deploy.halt() // but not the loop that names them
		}
	}

	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+max(p.opts.DeleteTimeout, 0))
		defer cancel()
	}
	t0 := time.Now()
	if err := deleteNamespace(ctx, p.cs, p.ns); err != nil {
		return fmt.Errorf("kube backends: delete namespace %s: %w", p.ns, err)
	}
	if p.opts.DeleteTimeout < 0 {
		return nil
	}
	if err := waitNamespaceGone(ctx, p.cs, p.ns, p.opts.DeleteTimeout); err != nil {
		return fmt.Errorf("kube backends: %w", err)
	}
	fmt.Fprintf(p.opts.Log, "kube: namespace %s deleted in %v\n", p.ns, time.Since(t0).Round(time.Millisecond))
	return nil
}

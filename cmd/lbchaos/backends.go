package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/external"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/process"
)

// chooseProvider resolves --backends. Every provider gives its backends
// token, the run's control token, and sends it on its control calls. The
// returned func releases what the provider holds (containers, networks)
// and is safe to defer.
func chooseProvider(ctx context.Context, choice string, exp *experiments.Experiment, dopts docker.Options, kf kubeFlags, token string) (fleet.Provider, func(), error) {
	logw := dopts.Log
	dopts.Token, kf.token = token, token
	local := process.Provider{Token: token}
	nop := func() {}
	if len(exp.Instances.External) > 0 {
		switch choice {
		case "external", "auto":
			// Up front, so that an instance that does not answer stops the
			// run before anything is written (what the instances can take
			// is the engine's Check).
			p := external.Provider{Token: token}
			fl, err := p.Start(ctx, fleet.Spec{Instances: exp.Instances, Seed: exp.Seed})
			if err != nil {
				return nil, nop, fmt.Errorf("--backends %s: %w", choice, err)
			}
			if err := fl.Close(); err != nil {
				return nil, nop, fmt.Errorf("--backends %s: %w", choice, err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: external (%d instances answer)\n", exp.Instances.Count)
			return p, nop, nil
		case "process", "docker", "kube":
			return nil, nop, &exitError{2, fmt.Errorf("--backends %s: %s lists instances.external, instances that already run, and %s backends would start instances of their own; use --backends external (or auto)", choice, exp.Source, choice)}
		}
	}
	if len(exp.Zones) > 0 {
		// Each zone's clients send from a loopback address of their own
		// to instances on this machine's loopback.
		switch choice {
		case "process":
			return local, nop, nil
		case "auto":
			fmt.Fprintf(logw, "lbchaos: backends: process (%s has zones, whose clients send from a loopback address per zone)\n", exp.Name)
			return local, nop, nil
		case "docker", "kube", "external":
			return nil, nop, &exitError{2, fmt.Errorf("--backends %s: %s has zones, which run on process backends (each zone's clients send from a loopback address of their own) or in the simulator (--engine sim)", choice, exp.Source)}
		}
	}
	if app := exp.Instances.App; app != nil {
		switch choice {
		case "process", "external":
			return nil, nop, &exitError{2, fmt.Errorf("--backends %s: %s gives instances.app, your image %s, which lbchaos runs in containers beside its sidecars: it needs docker; use --backends docker (or auto with a Docker daemon)", choice, exp.Source, app.Image)}
		case "docker", "auto":
			p, err := docker.New(ctx, dopts)
			if err != nil {
				return nil, nop, fmt.Errorf("--backends %s: %s gives instances.app (your image %s), which needs Docker: %w", choice, exp.Source, app.Image, err)
			}
			// Up front: a missing image stops the run before anything is
			// written or started.
			if err := p.CheckApp(ctx, app); err != nil {
				closer(p, logw)()
				return nil, nop, fmt.Errorf("%s: %w", exp.Source, err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: docker (your image %s behind lbchaos sidecars, host network)\n", app.Image)
			return p, closer(p, logw), nil
		case "kube":
			p, err := kf.provider(ctx, exp, logw)
			if err != nil {
				return nil, nop, fmt.Errorf("--backends kube: %w", err)
			}
			if err := p.CheckApp(app); err != nil {
				kubeCloser(p, logw)()
				return nil, nop, fmt.Errorf("%s: %w", exp.Source, err)
			}
			return p, kubeCloser(p, logw), nil
		}
	}
	switch choice {
	case "external":
		return nil, nop, &exitError{2, errors.New("--backends external: give the instances' URLs with --backend URL (repeat, one per instance) or instances.external in the experiment file")}
	case "process":
		return local, nop, nil
	case "docker":
		p, err := docker.New(ctx, dopts)
		if err != nil {
			return nil, nop, fmt.Errorf("--backends docker: %w", err)
		}
		return p, closer(p, logw), nil
	case "kube":
		p, err := kf.provider(ctx, exp, logw)
		if err != nil {
			return nil, nop, fmt.Errorf("--backends kube: %w", err)
		}
		return p, kubeCloser(p, logw), nil
	case "auto":
		if len(exp.Tiers) > 0 {
			fmt.Fprintf(logw, "lbchaos: backends: process (%s has tiers, whose instances call the next tier from this process)\n", exp.Name)
			return local, nop, nil
		}
		pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := docker.Available(pingCtx)
		cancel()
		if err != nil {
			if exp.NeedsContainers() {
				return nil, nop, fmt.Errorf("%s acts on containers, and %w", exp.Name, err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: process (%v)\n", err)
			return local, nop, nil
		}
		p, err := docker.New(ctx, dopts)
		if err != nil {
			if exp.NeedsContainers() {
				return nil, nop, fmt.Errorf("--backends auto: %w", err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: process (Docker answered, but: %v)\n", err)
			return local, nop, nil
		}
		fmt.Fprintf(logw, "lbchaos: backends: docker (%s network)\n", map[bool]string{true: "host", false: "published-port"}[dopts.HostNetwork])
		return p, closer(p, logw), nil
	default:
		return nil, nop, &exitError{2, fmt.Errorf("--backends: unknown value %q (process, docker, kube, external or auto)", choice)}
	}
}

// externalFlags are --backend and --sidecar, each repeatable.
type externalFlags struct {
	backends, sidecars []string
}

// overrides checks the flags against --backends and --engine and pairs
// each --backend with its --sidecar; nil when no --backend is given.
func (x externalFlags) overrides(backends, engine string) ([]experiments.External, error) {
	switch {
	case len(x.backends) == 0 && len(x.sidecars) > 0:
		return nil, errors.New("--sidecar: give it with --backend URL, one --sidecar per --backend, in order")
	case len(x.backends) == 0:
		return nil, nil
	case backends != "external" && backends != "auto":
		return nil, fmt.Errorf("--backend with --backends %s: --backend points the run at instances that already run, and %s backends start instances of their own; leave --backends out (--backend implies external) or drop --backend", backends, backends)
	case engine != "real":
		return nil, fmt.Errorf("--backend: external instances run with --engine real only (got --engine %s)", engine)
	case len(x.sidecars) > 0 && len(x.sidecars) != len(x.backends):
		return nil, fmt.Errorf("--sidecar: %d given for %d --backend URLs; give one per --backend, in order, or none", len(x.sidecars), len(x.backends))
	}
	out := make([]experiments.External, len(x.backends))
	for i, b := range x.backends {
		if err := experiments.CheckBaseURL(b); err != nil {
			return nil, fmt.Errorf("--backend %d: %w", i+1, err)
		}
		out[i].URL = b
		if len(x.sidecars) > 0 {
			if err := experiments.CheckBaseURL(x.sidecars[i]); err != nil {
				return nil, fmt.Errorf("--sidecar %d: %w", i+1, err)
			}
			out[i].Sidecar = x.sidecars[i]
		}
	}
	return out, nil
}

// checkInstances prints a note when --backend changed the number of
// instances from the file's fileCount, and refuses, as a usage error, an
// experiment without a service time whose instances lbchaos would start
// or simulate.
func checkInstances(stderr io.Writer, exp *experiments.Experiment, fileCount int, engine string) error {
	in := exp.Instances
	if len(in.External) > 0 && in.Count != fileCount {
		fmt.Fprintf(stderr, "lbchaos: %s: %d instances, one per --backend (the file has %d)\n", exp.Name, in.Count, fileCount)
	}
	if in.Foreign() || in.Modeled() {
		return nil
	}
	if engine == "sim" {
		return &exitError{2, fmt.Errorf("%s: instances.service: is required to simulate the instances (--engine sim), e.g. service: {dist: fixed, value: 10ms}; without one the file runs only against instances that already run: --engine real --backend URL (one per instance)", exp.Source)}
	}
	return &exitError{2, fmt.Errorf("%s: instances.service: is required for the instances lbchaos starts, which serve with that service time, e.g. service: {dist: fixed, value: 10ms}; without one the file runs only against instances that already run: --backend URL (one per instance)", exp.Source)}
}

// urlList collects a repeated flag.
type urlList struct{ urls *[]string }

func (l urlList) String() string {
	if l.urls == nil {
		return ""
	}
	return strings.Join(*l.urls, ",")
}

func (l urlList) Set(v string) error { *l.urls = append(*l.urls, v); return nil }

func closer(p *docker.Provider, logw io.Writer) func() {
	return func() {
		// A fresh context: the run's own may be cancelled by Ctrl-C.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			fmt.Fprintf(logw, "lbchaos: removing containers of run %s: %v\n", p.RunID(), err)
		}
	}
}

// dockerOptions: containers are reused across strategies, reset to their
// initial state through the control API and the Docker API (about 10 ms for
// ten instances, against about 2 s to start ten new ones).
func dockerOptions(logw io.Writer, hostNetwork bool) docker.Options {
	return docker.Options{Log: logw, Reuse: true, HostNetwork: hostNetwork}
}

// hostNetwork resolves --docker-network. The engine's port publishing on
// Linux goes through the userland docker-proxy, which costs milliseconds
// at p50 under load (docs/performance-log.md); a local Linux engine can run the
// containers in the host's network namespace instead. A remote engine
// (DOCKER_HOST over TCP or SSH) or a VM-backed one elsewhere cannot.
func hostNetwork(choice string) (bool, error) {
	switch choice {
	case "host":
		return true, nil
	case "published":
		return false, nil
	case "auto":
		h := os.Getenv("DOCKER_HOST")
		return runtime.GOOS == "linux" && (h == "" || strings.HasPrefix(h, "unix://")), nil
	default:
		return false, fmt.Errorf("--docker-network: unknown value %q (auto, host or published)", choice)
	}
}

// proxyMissing, when set, says which proxy strategies lack their proxy
// (live.Options.ProxyMissing); nil looks for the proxies on this machine.
// Tests set it to make a proxy look missing.
var proxyMissing func(strategy string) error

// ownSidecars makes each external instance without a sidecar that a fault
// names its own sidecar when it is an lbchaos instance (lbchaos serve
// answers the control API on its own address), so that
// lbchaos run fast-fail --backend URL --backend URL applies the fault to
// instances started with lbchaos serve. It asks each such instance for its
// fault once, with a short timeout and the run's token; one that does not
// answer as an lbchaos instance is left as it is, and the fault's check
// says what it needs.
func ownSidecars(ctx context.Context, exp *experiments.Experiment, token string, stderr io.Writer) {
	ext := exp.Instances.External
	if len(ext) == 0 {
		return
	}
	ext = slices.Clone(ext)
	asked := map[int]bool{}
	for _, f := range exp.Faults {
		id := f.Instance
		if id < 0 || id >= len(ext) || ext[id].Sidecar != "" || asked[id] {
			continue
		}
		asked[id] = true
		c := faultyserver.Client{BaseURL: ext[id].URL, Token: token, HTTP: &http.Client{Timeout: 2 * time.Second}}
		if _, err := c.Fault(ctx); err == nil {
			ext[id].Sidecar = ext[id].URL
			fmt.Fprintf(stderr, "lbchaos: instance %d (%s) is an lbchaos instance: faults act through its own control API\n", id, ext[id].URL)
		}
	}
	exp.Instances.External = ext
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/process"
)

// chooseProvider resolves --backends. The returned func releases what the
// provider holds (containers, networks) and is safe to defer.
func chooseProvider(ctx context.Context, choice string, exp *experiments.Experiment, dopts docker.Options) (fleet.Provider, func(), error) {
	logw := dopts.Log
	nop := func() {}
	switch choice {
	case "process":
		return process.Provider{}, nop, nil
	case "docker":
		p, err := docker.New(ctx, dopts)
		if err != nil {
			return nil, nop, fmt.Errorf("--backends docker: %w", err)
		}
		return p, closer(p, logw), nil
	case "auto":
		pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := docker.Available(pingCtx)
		cancel()
		if err != nil {
			if exp.NeedsContainers() {
				return nil, nop, fmt.Errorf("%s acts on containers, and %w", exp.Name, err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: process (%v)\n", err)
			return process.Provider{}, nop, nil
		}
		p, err := docker.New(ctx, dopts)
		if err != nil {
			if exp.NeedsContainers() {
				return nil, nop, fmt.Errorf("--backends auto: %w", err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: process (Docker answered, but: %v)\n", err)
			return process.Provider{}, nop, nil
		}
		fmt.Fprintf(logw, "lbchaos: backends: docker (%s network)\n", map[bool]string{true: "host", false: "published-port"}[dopts.HostNetwork])
		return p, closer(p, logw), nil
	default:
		return nil, nop, &exitError{2, fmt.Errorf("--backends: unknown value %q (process, docker or auto)", choice)}
	}
}

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
// at p50 under load (README, performance); a local Linux engine can run the
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

// Package fleet is the provider seam: where backend instances run. A
// Provider starts a Fleet of N instances of a workload (today the fake
// server, faultyserver) and hands back each instance's address and control
// client; a fleet whose instances are containers also implements
// faultyserver.Containers, through which container faults act.
//
// Implementations live in packages of their own (harness/process,
// harness/docker, harness/external); the driver and engines know only
// these interfaces. An instance may have no control API (Backend.Control
// nil): Check refuses a fault schedule that needs one.
package fleet

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
)

// Spec describes the backends one strategy runs against: the experiment's
// instances, and the run's seed (mixed with each instance id).
type Spec struct {
	experiments.Instances
	Seed uint64
}

// Equal reports whether f and g describe the same fleet.
func (f Spec) Equal(g Spec) bool {
	a, b := f.Instances, g.Instances
	return f.Seed == g.Seed && a.Count == b.Count && a.Workers == b.Workers && a.QueueLimit == b.QueueLimit &&
		a.KeepAbandoned == b.KeepAbandoned && a.ResponseBytes == b.ResponseBytes && a.Service == b.Service && slices.Equal(a.Each, b.Each) &&
		slices.Equal(a.External, b.External) && a.HealthPath == b.HealthPath && a.App.Equal(b.App) &&
		a.Readiness.Equal(b.Readiness) && a.Shutdown == b.Shutdown && a.Kube.Equal(b.Kube)
}

// ServerConfig is the faultyserver configuration of instance id.
func (f Spec) ServerConfig(id int) faultyserver.Config {
	in := f.Instance(id)
	return faultyserver.Config{
		ID:            id,
		Workers:       in.Workers,
		QueueLimit:    f.QueueLimit,
		Service:       in.Service,
		Seed:          InstanceSeed(f.Seed, id),
		KeepAbandoned: f.KeepAbandoned,
		ResponseBytes: f.ResponseBytes,
		Shutdown:      f.Shutdown.Shutdown,
	}
}

// Backend is one running instance.
type Backend struct {
	ID  int
	URL *url.URL // base URL the balancer sends requests to
	// Control is its control API, a client that sends the run's control
	// token (which the provider gave the instance); nil for an instance
	// without one (an external instance without a sidecar), which takes no
	// server faults and reports no stats.
	Control *faultyserver.Client
	// HealthPath is the path a GET of which tells that an instance
	// without Control answers ("" = "/").
	HealthPath string
}

// Healthy checks that b answers: through its control API, or without one
// by a GET of its health path, which must answer with a status below 500.
func Healthy(ctx context.Context, b Backend) error {
	if b.Control != nil {
		return b.Control.Healthy(ctx)
	}
	u := *b.URL
	u.Path = strings.TrimSuffix(u.Path, "/") + cmp.Or(b.HealthPath, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("GET %s: status %s", u.String(), resp.Status)
	}
	return nil
}

// healthClient follows no redirects: any answer below 500 is an answer.
var healthClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Fleet is a set of running backends, indexed by instance id. A fleet whose
// instances are containers also implements faultyserver.Containers.
type Fleet interface {
	// Backends returns the instances in id order. After a container fault
	// is healed an instance's URL may have changed: read it again.
	Backends() []Backend
	// Close stops every backend and releases what they hold; idempotent.
	Close() error
}

// Provider starts fleets of backends.
type Provider interface {
	Name() string // recorded in summary.json as "backends"
	Start(ctx context.Context, spec Spec) (Fleet, error)
}

// ContainerProvider is implemented by providers whose fleets implement
// faultyserver.Containers.
type ContainerProvider interface {
	Provider
	ContainerFaults() bool
}

// AppProvider is implemented by providers that can run the user's own
// image as the instances (experiments.Instances.App), each behind an
// lbchaos sidecar.
type AppProvider interface {
	Provider
	RunsApps() bool
}

// InProcess is implemented by providers whose backends run inside this
// process: each client connection then costs two of its file descriptors,
// which bounds the connections a run may open.
type InProcess interface {
	InProcess() bool
}

// Check returns an error naming the first fault of exp that p's backends
// cannot take (a container-level fault on backends that are not
// containers; on external instances, any container fault, and a server
// fault on one without a sidecar; a network fault on instances whose port
// is not on this host's loopback, or when this process cannot change the
// packet filter), or that exp gives no service time for the instances p
// starts. Engines check it before any work.
func Check(exp *experiments.Experiment, p Provider) error {
	if !exp.Instances.Foreign() && !exp.Instances.Modeled() {
		return fmt.Errorf("%s: instances.service: is required for the instances %s backends start, which serve with that service time, e.g. service: {dist: fixed, value: 10ms}; "+
			"without one the file runs only against instances that already run (--backend URL, one per instance)", exp.Source, p.Name())
	}
	if app := exp.Instances.App; app != nil {
		if ap, ok := p.(AppProvider); !ok || !ap.RunsApps() {
			return fmt.Errorf("%s: instances.app runs your image %s in containers, which %s backends cannot start; run with --backends docker (or auto with a Docker daemon)",
				exp.Source, app.Image, p.Name())
		}
	}
	if ext := exp.Instances.External; len(ext) > 0 {
		for i, f := range exp.Faults {
			x := ext[f.Instance]
			what := fmt.Sprintf("faults[%d]: mode %q", i, f.Spec.Mode())
			if f.Warmup {
				what = fmt.Sprintf("faults[%d]: the warm-up of instance %d (mode %q)", i, f.Instance, f.Spec.Mode())
			}
			switch {
			case faultyserver.IsNetworkFault(f.Spec): // checkNetwork's
			case faultyserver.IsContainerFault(f.Spec):
				return fmt.Errorf("%s: %s acts on containers, and instance %d (%s) runs outside lbchaos, which cannot reach its runtime",
					exp.Source, what, f.Instance, x.URL)
			case x.Sidecar == "":
				return fmt.Errorf("%s: %s on instance %d (%s) needs an lbchaos sidecar in front of it to apply the fault; give one with --sidecar or instances.external[%d].sidecar",
					exp.Source, what, f.Instance, x.URL, f.Instance)
			}
		}
		return checkNetwork(exp, p, ext)
	}
	if cp, ok := p.(ContainerProvider); !ok || !cp.ContainerFaults() {
		for i, f := range exp.Faults {
			if faultyserver.IsContainerFault(f.Spec) {
				return fmt.Errorf("%s: faults[%d]: mode %q acts on containers, which %s backends do not have; run with --backends docker (or kube)",
					exp.Source, i, f.Spec.Mode(), p.Name())
			}
		}
	}
	return checkNetwork(exp, p, nil)
}

// InstanceSeed derives instance id's seed from a run seed (SplitMix64), so
// that instances draw independent but reproducible service times. The
// simulator seeds its instances the same way.
func InstanceSeed(seed uint64, id int) uint64 {
	z := seed + 0x9e3779b97f4a7c15*uint64(id+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Tiered is implemented by fleets whose instances can call a downstream
// tier (an experiment's tiers): SetDownstream makes instance id call d
// for every request it serves from then on (see faultyserver.Downstream).
type Tiered interface {
	SetDownstream(id int, d faultyserver.Downstream)
}

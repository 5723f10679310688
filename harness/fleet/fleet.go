// Package fleet is the provider seam: where backend instances run. A
// Provider starts a Fleet of N instances of a workload (today the fake
// server, faultyserver) and hands back each instance's address and control
// client; a fleet whose instances are containers also implements
// faultyserver.Containers, through which container faults act.
//
// Implementations live in packages of their own (harness/process,
// harness/docker); the driver and engines know only these interfaces.
package fleet

import (
	"context"
	"fmt"
	"net/url"
	"slices"

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
		a.KeepAbandoned == b.KeepAbandoned && a.Service == b.Service && slices.Equal(a.Each, b.Each)
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
	}
}

// Backend is one running instance.
type Backend struct {
	ID      int
	URL     *url.URL             // base URL the balancer sends requests to
	Control *faultyserver.Client // its control API
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

// InProcess is implemented by providers whose backends run inside this
// process: each client connection then costs two of its file descriptors,
// which bounds the connections a run may open.
type InProcess interface {
	InProcess() bool
}

// Check returns an error naming the first fault of exp that p's backends
// cannot take (a container-level fault on backends that are not
// containers). Engines check it before any work.
func Check(exp *experiments.Experiment, p Provider) error {
	if cp, ok := p.(ContainerProvider); ok && cp.ContainerFaults() {
		return nil
	}
	for i, f := range exp.Faults {
		if faultyserver.IsContainerFault(f.Spec) {
			return fmt.Errorf("%s: faults[%d]: mode %q acts on containers, which %s backends do not have; run with --backends docker",
				exp.Source, i, f.Spec.Mode(), p.Name())
		}
	}
	return nil
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

package kube

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// drainTimeout bounds a reused instance's wait for the requests of the
// previous fleet to leave it.
const drainTimeout = 2 * time.Second

// createConcurrency bounds the pod creations in flight at once.
const createConcurrency = 16

// instance is one backend pod. mu serialises the chaos operations on it;
// the flags record what must be undone before reuse.
type instance struct {
	id   int
	name string // the pod's, kept across a restart
	// port is the port its server (or sidecar) listens on, of 127.0.0.1
	// in NetworkHost mode; appPort the app's (instances.app).
	port    int
	appPort int

	// down is set by a scheduled kill before it deletes the pod and
	// cleared once a restart has it answering again: the pod's end is
	// the harness's, not a crash (Watch).
	down atomic.Bool

	mu         sync.Mutex
	paused     bool
	killed     bool
	cpuLimited bool
	signals    int // ephemeral containers added (their names count up)
}

// kubeFleet is a Fleet of pods; insts is immutable.
type kubeFleet struct {
	fleet.Addresses
	p     *Provider
	spec  fleet.Spec
	seq   int
	insts []*instance
	// service is the address of the fleet's Service (Options.Service);
	// nil without one.
	service *url.URL
	// deploy is the fleet's Deployment (deployment.go); nil for bare
	// pods.
	deploy *deployment
}

var (
	_ fleet.Fleet             = (*kubeFleet)(nil)
	_ faultyserver.Containers = (*kubeFleet)(nil)
)

// startFleet creates spec.Count pods and waits until every one answers. On
// error it deletes the fleet's pods.
func (p *Provider) startFleet(ctx context.Context, spec fleet.Spec, seq int) (*kubeFleet, error) {
	if spec.Count <= 0 {
		return nil, fmt.Errorf("kube backends: %d instances", spec.Count)
	}
	if spec.Kube.Workload == experiments.WorkloadDeployment {
		f, err := p.startDeployment(ctx, spec, seq)
		if err != nil {
			return nil, fmt.Errorf("kube backends: %w", err)
		}
		return f, nil
	}
	f := &kubeFleet{p: p, spec: spec, seq: seq, insts: make([]*instance, spec.Count)}
	per := portsPerInstance(spec)
	var free []int
	if p.network == NetworkHost {
		var err error
		if free, err = fleet.FreeLoopbackPorts(per * spec.Count); err != nil {
			return nil, fmt.Errorf("kube backends: free ports on 127.0.0.1: %w", err)
		}
	}
	for id := range spec.Count {
		in := &instance{id: id, name: podName(seq, id)}
		if err := p.assignPorts(spec, in, free[min(len(free), id*per):]); err != nil {
			return nil, fmt.Errorf("kube backends: %w", err)
		}
		f.insts[id] = in
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(createConcurrency)
	for _, in := range f.insts {
		g.Go(func() error {
			pod, err := p.podFor(spec, seq, in)
			if err != nil {
				return fmt.Errorf("instance %d: %w", in.id, err)
			}
			return p.createPod(gctx, pod)
		})
	}
	err := g.Wait()
	var bs []fleet.Backend
	if err == nil {
		bs, err = p.waitReady(ctx, seq, f.insts)
	}
	if err == nil && p.opts.Service {
		f.service, err = p.expose(ctx, seq, spec.Count)
	}
	if err != nil {
		f.Terminate()
		return nil, fmt.Errorf("kube backends: %w", err)
	}
	f.SetAll(bs)
	return f, nil
}

// Close implements fleet.Fleet: the pods are deleted, or with
// Options.Reuse released to the provider for the next Start.
func (f *kubeFleet) Close() error {
	switch {
	case !f.MarkClosed():
	case f.deploy != nil:
		f.p.pool.Drop(f) // a rollout replaces the pods: never reused
	default:
		f.p.pool.Release(f)
	}
	return nil
}

// Terminate deletes f's pods (grace period 0), with a fresh timeout: for
// a Deployment first the Deployment and its ReplicaSets, and the fleet's
// Service, if any.
func (f *kubeFleet) Terminate() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if f.p.opts.Service {
		if err := f.p.cs.delete(ctx, f.p.ns, "services", serviceName(f.seq), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(f.p.opts.Log, "kube: deleting Service %s: %v (it goes with the namespace)\n", serviceName(f.seq), err)
		}
	}
	if d := f.deploy; d != nil {
		d.halt()
		// First the Deployment and its ReplicaSets, which would make new
		// pods; then the pods, at once.
		err := d.apps.delete(ctx, f.p.ns, "deployments", d.name, backgroundDelete)
		if err == nil || apierrors.IsNotFound(err) {
			err = d.apps.deleteCollection(ctx, f.p.ns, "replicasets", backgroundDelete, f.podSelector())
		}
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(f.p.opts.Log, "kube: deleting Deployment %s: %v (it goes with the namespace)\n", d.name, err)
		}
	}
	sel := f.podSelector()
	if err := f.p.cs.deleteCollection(ctx, f.p.ns, "pods", zeroGrace, sel); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(f.p.opts.Log, "kube: deleting the pods of fleet %d: %v (they go with the namespace)\n", f.seq, err)
	}
}

// Spec implements fleet.Reusable.
func (f *kubeFleet) Spec() fleet.Spec { return f.spec }

// Reuse implements fleet.Reusable: it resets f's pods and returns a new
// open fleet over them, which f (closed) gives up.
func (f *kubeFleet) Reuse(ctx context.Context) (*kubeFleet, error) {
	if err := f.reset(ctx); err != nil {
		return nil, err
	}
	g := &kubeFleet{p: f.p, spec: f.spec, seq: f.seq, insts: f.insts, service: f.service}
	g.SetAll(f.Backends())
	return g, nil
}

// inst returns instance id, or an error when f is closed or has no such
// instance.
func (f *kubeFleet) inst(id int) (*instance, error) {
	if err := f.Usable(id); err != nil {
		return nil, fmt.Errorf("kube backends: %w", err)
	}
	return f.insts[id], nil
}

// locked runs do with in's chaos operations locked out.
func (f *kubeFleet) locked(in *instance, do func() error) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return do()
}

// withInstance runs do on instance id, locked (see locked).
func (f *kubeFleet) withInstance(id int, do func(*instance) error) error {
	in, err := f.inst(id)
	if err != nil {
		return err
	}
	return f.locked(in, func() error { return do(in) })
}

// reset brings f's pods back to a new fleet's state, concurrently: each is
// continued if paused, its CPU limit lifted, created again if it was
// killed, and its server reset through the control API.
func (f *kubeFleet) reset(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(createConcurrency)
	for _, in := range f.insts {
		g.Go(func() error { return f.locked(in, func() error { return f.resetInstance(gctx, in) }) })
	}
	return g.Wait()
}

func (f *kubeFleet) resetInstance(ctx context.Context, in *instance) error {
	if in.paused {
		if err := f.signal(ctx, in, "CONT"); err != nil {
			return err
		}
	}
	if in.cpuLimited {
		if err := f.setCPU(ctx, in, 0); err != nil {
			return err
		}
	}
	if !in.killed && f.spec.App != nil && f.spec.App.Restart {
		if err := f.kill(ctx, in); err != nil {
			return err
		}
	}
	if in.killed {
		if err := f.restart(ctx, in); err != nil {
			return err
		}
	}
	if err := fleet.ResetServer(ctx, f.Backend(in.id).Control, drainTimeout); err != nil {
		return fmt.Errorf("kube backends: instance %d: %w", in.id, err)
	}
	return nil
}

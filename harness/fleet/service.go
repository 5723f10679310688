package fleet

import (
	"context"
	"net/url"
	"time"
)

// ServiceProvider is implemented by providers that can put a fleet behind
// a Kubernetes Service (the kube:service strategy).
type ServiceProvider interface {
	Provider
	// Services reports whether its fleets run behind a Service; false
	// names why not.
	Services() (bool, string)
}

// InCluster is implemented by fleets that may run behind a Service, whose
// instances only pods of their cluster reach (the pod network). Every
// strategy's load then comes from generator pods, and kube:service sends
// it to the Service. The harness reaches their control API through the
// cluster's API server, never the instances' own addresses.
type InCluster interface {
	// ServiceURL is the base URL of the Service (its ClusterIP and port);
	// nil when the fleet is not behind one.
	ServiceURL() *url.URL
}

// ServiceOf is the base URL of fl's Service; nil when fl is not behind
// one.
func ServiceOf(fl Fleet) *url.URL {
	if svc, ok := fl.(InCluster); ok {
		return svc.ServiceURL()
	}
	return nil
}

// Rotation is a change in whether an instance behind a Service gets
// traffic: its pod's readiness (the kubelet's probe) or its place among
// the Service's ready endpoints (the EndpointSlice kube-proxy reads).
type Rotation struct {
	Instance int
	Time     time.Time // when the watch saw it
	Kind     string    // one of the Rotation kinds
	Detail   string
}

// Rotation kinds, recorded as reports.Event kinds.
const (
	RotationNotReady    = "not-ready"    // the pod's Ready condition turned false (or the pod went)
	RotationReady       = "ready"        // it turned true again
	RotationEndpointOut = "endpoint-out" // the Service's slices no longer list it ready
	RotationEndpointIn  = "endpoint-in"  // they list it ready again
)

// RotationWatcher is implemented by fleets behind a Service. WatchRotation
// calls report, from a goroutine of its own, for every change from its
// return until stop returns; stop is idempotent and waits until report is
// no longer called.
type RotationWatcher interface {
	WatchRotation(report func(Rotation)) (stop func(), err error)
}

// Roller is implemented by fleets whose instances are the pods of a
// Kubernetes Deployment (instances.kube.workload: deployment).
type Roller interface {
	// Rollout starts a rolling restart and returns; done is closed when
	// the Deployment reports it complete, or when ctx ends.
	Rollout(ctx context.Context) (done <-chan struct{}, err error)
	// RolloutNotes returns, once, what the fleet noted about its pods
	// (one that came when every instance id was taken).
	RolloutNotes() []string
}

// EndpointWatcher is implemented by fleets behind a Service whose ready
// endpoints can change under the run (a rolling restart, a pod gone).
// WatchEndpoints calls report with the whole current set, instance id to
// address, once before it returns and then at every change, from a
// goroutine of its own, until stop returns; stop is idempotent.
type EndpointWatcher interface {
	WatchEndpoints(report func(map[int]*url.URL)) (stop func(), err error)
}

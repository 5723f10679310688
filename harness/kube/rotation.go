package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

var _ fleet.RotationWatcher = (*kubeFleet)(nil)

// rotationPeriod is how often WatchRotation lists the fleet's pods and
// its Service's EndpointSlices: a change is dated within this of when the
// API server had it (the conditions' own times have whole seconds only).
const rotationPeriod = 100 * time.Millisecond

// WatchRotation implements fleet.RotationWatcher for a fleet behind a
// Service: each pod's Ready condition (the kubelet's readiness probe; a
// pod gone counts as not ready) and its place among the Service's ready
// endpoints, as the EndpointSlice controller publishes them for
// kube-proxy. Changes from the state at its start are reported.
func (f *kubeFleet) WatchRotation(report func(fleet.Rotation)) (stop func(), err error) {
	if f.service == nil {
		return nil, fmt.Errorf("kube backends: the fleet is not behind a Service")
	}
	ctx, cancel := context.WithCancel(context.Background())
	// look returns each instance's readiness and endpoint state; ok is
	// false when a list failed (tried again next period).
	look := func() (ready, in map[int]bool, ok bool) {
		pods, err := f.p.cs.listPods(ctx, f.p.ns, f.podSelector())
		if err != nil {
			return nil, nil, false
		}
		eps, err := f.p.readyEndpoints(ctx, serviceName(f.seq))
		if err != nil {
			return nil, nil, false
		}
		ready, in = map[int]bool{}, map[int]bool{}
		byName := f.podIDs() // a Deployment's grow as its pods are named
		for i := range pods.Items {
			if id, ok := byName[pods.Items[i].Name]; ok && pods.Items[i].DeletionTimestamp == nil {
				ready[id] = podReady(&pods.Items[i])
			}
		}
		for _, e := range eps {
			if e.TargetRef == nil {
				continue
			}
			if id, ok := byName[e.TargetRef.Name]; ok {
				in[id] = true
			}
		}
		return ready, in, true
	}
	ready, in, ok := look()
	if !ok {
		cancel()
		return nil, fmt.Errorf("kube backends: list the pods and EndpointSlices of Service %s/%s", f.p.ns, serviceName(f.seq))
	}
	return every(ctx, cancel, rotationPeriod, func() {
		r, e, ok := look()
		if !ok {
			return // tried again next period
		}
		now := time.Now()
		for _, inst := range f.insts {
			id := inst.id
			if r[id] != ready[id] {
				kind, detail := fleet.RotationReady, "the readiness probe passes"
				if !r[id] {
					kind, detail = fleet.RotationNotReady, "the pod is not ready"
					if _, there := r[id]; !there {
						detail = "the pod is gone"
					}
				}
				report(fleet.Rotation{Instance: id, Time: now, Kind: kind, Detail: detail})
			}
			if e[id] != in[id] {
				kind, detail := fleet.RotationEndpointIn, "listed ready in the Service's EndpointSlice"
				if !e[id] {
					kind, detail = fleet.RotationEndpointOut, "no longer a ready endpoint of the Service"
				}
				report(fleet.Rotation{Instance: id, Time: now, Kind: kind, Detail: detail})
			}
		}
		ready, in = r, e
	}), nil
}

package kube

import (
	"context"
	"fmt"
	"maps"
	"net/url"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

var _ fleet.EndpointWatcher = (*kubeFleet)(nil)

// WatchEndpoints implements fleet.EndpointWatcher for a fleet behind a
// Service: every rotationPeriod it lists the Service's EndpointSlices and
// reports the ready endpoints of named pods, each at the address the
// slice gives, when they differ from the last report. This is what a
// client with the cluster's endpoint discovery sees; a client-side
// strategy's generators get it (live.PushEndpoints).
func (f *kubeFleet) WatchEndpoints(report func(map[int]*url.URL)) (stop func(), err error) {
	if f.service == nil {
		return nil, fmt.Errorf("kube backends: the fleet is not behind a Service")
	}
	ctx, cancel := context.WithCancel(context.Background())
	look := func() (map[int]string, bool) {
		eps, err := f.p.readyEndpoints(ctx, serviceName(f.seq))
		if err != nil {
			return nil, false
		}
		ids := f.podIDs()
		out := map[int]string{}
		for _, e := range eps {
			if e.TargetRef == nil || len(e.Addresses) == 0 {
				continue
			}
			if id, ok := ids[e.TargetRef.Name]; ok {
				out[id] = urlHost(e.Addresses[0], podPort)
			}
		}
		return out, true
	}
	var last map[int]string
	send := func(set map[int]string) {
		eps := make(map[int]*url.URL, len(set))
		for id, host := range set {
			eps[id] = &url.URL{Scheme: "http", Host: host}
		}
		report(eps)
		last = set
	}
	first, ok := look()
	if !ok {
		cancel()
		return nil, fmt.Errorf("kube backends: list the EndpointSlices of Service %s/%s", f.p.ns, serviceName(f.seq))
	}
	send(first)
	return every(ctx, cancel, rotationPeriod, func() {
		if set, ok := look(); ok && !maps.Equal(set, last) {
			send(set)
		}
	}), nil
}

package transport

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
)

// SetEndpoints gives the client the instances' current endpoints, as a
// client-side balancer's discovery (xDS EDS, a Kubernetes resolver) gives
// them: eps maps instance id to base URL and is the whole set, not a
// change of it. Every balancer of the client (each replica) then picks
// only among its ids (strategies.Balancer.SetMembers), and each id's
// requests go to its URL from now on (SetTarget); an instance left out
// keeps its last URL for the requests already picked for it. An empty or
// nil eps leaves no instance to pick: every request then fails with
// ErrNoHost until the next call. An id outside the client's instances,
// or a nil URL, is an error, and changes nothing.
func (b *Client) SetEndpoints(eps map[int]*url.URL) error {
	for id, u := range eps {
		if id < 0 || id >= len(b.targets) {
			return fmt.Errorf("endpoint of instance %d: not one of the client's %d instances (0 to %d)", id, len(b.targets), len(b.targets)-1)
		}
		if u == nil {
			return fmt.Errorf("endpoint of instance %d: no URL", id)
		}
	}
	members := slices.Sorted(maps.Keys(eps))
	if members == nil {
		members = []int{}
	}
	b.endpointsMu.Lock()
	defer b.endpointsMu.Unlock()
	// The URLs first: a member is picked as soon as it is one, and must
	// have its address by then.
	for id, u := range eps {
		b.SetTarget(id, u)
	}
	for _, lb := range b.lbs {
		if err := lb.SetMembers(members); err != nil {
			return err // the ids are checked above
		}
	}
	return nil
}

// Endpoints returns the instances the client's balancers may pick, with
// their current base URLs: those of the latest SetEndpoints, or else
// every instance that has a URL (a nil target, an instance not known
// yet, is left out).
func (b *Client) Endpoints() map[int]*url.URL {
	b.endpointsMu.Lock()
	defer b.endpointsMu.Unlock()
	var ids []int
	if len(b.lbs) > 0 {
		ids = b.lbs[0].Members() // every replica has the same
	}
	if ids == nil {
		ids = make([]int, len(b.targets))
		for id := range ids {
			ids[id] = id
		}
	}
	eps := make(map[int]*url.URL, len(ids))
	for _, id := range ids {
		if u := b.Target(id); u != nil {
			eps[id] = u
		}
	}
	return eps
}

// endpoint reports whether instance id is among the client's endpoints:
// a member of its balancers (every instance is, until SetEndpoints).
func (b *Client) endpoint(id int) bool {
	if len(b.lbs) == 0 {
		return true
	}
	members := b.lbs[0].Members()
	return members == nil || slices.Contains(members, id)
}

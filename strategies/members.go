package strategies

import (
	"fmt"
	"slices"
)

// SetMembers restricts the endpoints that may be picked to members until
// the next call, as a client-side balancer follows the endpoints its
// discovery (xDS EDS, a Kubernetes resolver) gives it: ids in 0..N-1, in
// any order, duplicates ignored; nil makes every endpoint a member again,
// as it is from New; an empty set leaves none, and every Pick then
// returns NoHost, as when every endpoint is ejected.
//
// Membership narrows the host set (SetHosts) from outside every wrapper:
// ejection, health checks, slow start and the base strategy are given
// only the members, and learn of a change of them through UpdateHosts at
// the next pick, as of any change of their hosts; their state of an
// endpoint that stays a member, or that comes back, is kept. Endpoints
// that enter or leave the hosts picked from are reported as EventJoin and
// EventLeave events; a call that changes nothing reports nothing and
// tells the wrappers nothing. Requests in flight to an endpoint that left
// still end normally through their done.
//
// The experiment's own host set (instances that join later) and the
// members compose: an endpoint is picked once it is in both.
func (b *Balancer) SetMembers(members []int) error {
	var in []bool
	if members != nil {
		in = make([]bool, len(b.present))
		for _, id := range members {
			if id < 0 || id >= len(in) {
				return fmt.Errorf("strategies: SetMembers: endpoint %d is out of range 0..%d", id, len(in)-1)
			}
			in[id] = true
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.members = in
	b.narrow()
	return nil
}

// Members returns the members set by SetMembers, ascending; nil when every
// endpoint is a member.
func (b *Balancer) Members() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.members == nil {
		return nil
	}
	ids := []int{}
	for id, in := range b.members {
		if in {
			ids = append(ids, id)
		}
	}
	return ids
}

// narrow recomputes the hosts picked from, the members of the host set,
// reports the endpoints that entered or left them, and marks the feed
// changed when they did. b.mu is held.
func (b *Balancer) narrow() {
	present := make([]bool, len(b.listed))
	hosts := make([]int, 0, len(b.listed))
	for id, listed := range b.listed {
		if listed && (b.members == nil || b.members[id]) {
			present[id] = true
			hosts = append(hosts, id)
		}
	}
	if slices.Equal(present, b.present) {
		return
	}
	now := b.clock.Now()
	for id, was := range b.present {
		switch {
		case was && !present[id]:
			b.events(Event{Time: now, Endpoint: id, Kind: EventLeave})
		case !was && present[id]:
			b.events(Event{Time: now, Endpoint: id, Kind: EventJoin})
		}
	}
	b.hosts, b.present = hosts, present
	b.feed.changed()
}

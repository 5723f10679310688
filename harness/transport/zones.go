package transport

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver/upstream"
)

// Zones places a Client's balancer replicas and its instances in zones:
// each zone's replicas send from a source address of their own, so that an
// instance, and the kernel's packet filter, tell the caller's zone below
// HTTP; a request to an instance of another zone first waits
// CrossLatency, as the longer path would make it.
type Zones struct {
	ReplicaZone  []int // by replica: its zone
	InstanceZone []int // by instance: its zone
	// CrossLatency is what a request from one zone to another waits
	// before it is sent: the longer path's round trips, in one. It holds
	// the request's connection slot and counts in its latency and in the
	// instance's requests in flight, as a request on the wire would.
	CrossLatency time.Duration
	zones        int // how many zones
}

// ZoneSource is the loopback address zone z's clients send from:
// 127.0.0.11 for the first zone, 127.0.0.12 for the second, and so on.
func ZoneSource(z int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 0, 0, byte(11 + z)})
}

// WithZones makes a Client send from its replicas' zones (see Zones). It
// applies to requests to instances over HTTP/1.1.
func WithZones(z Zones) Option {
	return func(c *config) {
		for _, zs := range [][]int{z.ReplicaZone, z.InstanceZone} {
			for _, v := range zs {
				z.zones = max(z.zones, v+1)
			}
		}
		c.zones = &z
	}
}

// zoneRoundTrip sends req of replica to instance ep from the replica's
// zone, after the cross-zone latency when ep is in another zone.
func (b *Client) zoneRoundTrip(req *http.Request, replica, ep int) (*http.Response, error) {
	z := b.zones
	from := z.ReplicaZone[replica%len(z.ReplicaZone)]
	if z.CrossLatency > 0 && z.InstanceZone[ep] != from {
		t := time.NewTimer(z.CrossLatency)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		}
	}
	return b.clientAt(ep*z.zones+from, req.URL.Host, ZoneSource(from)).RoundTrip(req)
}

// clientAt returns the client in slot i (an instance, or an instance and
// a zone) for host, sending from src when it is valid; it replaces (and
// closes) the one for an address the instance no longer has.
func (b *Client) clientAt(i int, host string, src netip.Addr) *upstream.Client {
	if ic := b.clients[i].Load(); ic != nil && ic.host == host {
		return ic.up
	}
	b.clientMu.Lock()
	defer b.clientMu.Unlock()
	old := b.clients[i].Load()
	if old != nil && old.host == host {
		return old.up
	}
	ic := &instClient{host: host, up: upstream.New(host)}
	ic.up.SetMaxIdle(b.idle)
	if src.IsValid() {
		ic.up.SetLocalAddr(src)
	}
	b.clients[i].Store(ic)
	if old != nil {
		old.up.Close()
	}
	return ic.up
}

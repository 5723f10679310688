package transport

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/strategies"
)

// TestZonesSourceAndLatency: each zone's replica sends from its zone's
// loopback address, and a request to another zone's instance waits the
// cross-zone latency first.
func TestZonesSourceAndLatency(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]map[string]int{} // instance -> source address -> requests
	targets := make([]*url.URL, 2)
	for i := range targets {
		name := string(rune('0' + i))
		seen[name] = map[string]int{}
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			mu.Lock()
			seen[name][host]++
			mu.Unlock()
		}))
		t.Cleanup(s.Close)
		targets[i], _ = url.Parse(s.URL)
	}
	// Two replicas, zone a's and zone b's, each a round robin over both
	// instances: instance 0 is in zone a, instance 1 in zone b.
	lbs := []*strategies.Balancer{newRoundRobin(t, 2), newRoundRobin(t, 2)}
	const cross = 150 * time.Millisecond
	c := NewClient(lbs, targets, 5*time.Second, 0, WithZones(Zones{ReplicaZone: []int{0, 1}, InstanceZone: []int{0, 1}, CrossLatency: cross}))
	defer c.Close()
	var local, far []time.Duration
	for seq := range 8 {
		begin := time.Now()
		if _, err := send(t, c, seq); err != nil {
			t.Fatal(err)
		}
		took := time.Since(begin)
		rt, _ := c.Take(uint64(seq))
		if zone := seq % 2; rt.Instance == zone {
			local = append(local, took)
		} else {
			far = append(far, took)
		}
	}
	if len(local) == 0 || len(far) == 0 {
		t.Fatalf("local %v, far %v: round robin sent every request within or across zones", local, far)
	}
	for _, d := range far {
		if d < cross {
			t.Errorf("a cross-zone request took %v, under the cross-zone latency %v", d, cross)
		}
	}
	for _, d := range local {
		if d >= cross {
			t.Errorf("a request within its zone took %v, as long as the cross-zone latency %v", d, cross)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for inst, bySrc := range seen {
		for src := range bySrc {
			if src != "127.0.0.11" && src != "127.0.0.12" {
				t.Errorf("instance %s got requests from %s, not a zone's address", inst, src)
			}
		}
		if bySrc["127.0.0.11"] == 0 || bySrc["127.0.0.12"] == 0 {
			t.Errorf("instance %s: requests by source %v; want both zones'", inst, bySrc)
		}
	}
}

func TestZoneSource(t *testing.T) {
	if got := ZoneSource(0).String(); got != "127.0.0.11" {
		t.Errorf("zone 0 sends from %s", got)
	}
	if got := ZoneSource(15).String(); got != "127.0.0.26" {
		t.Errorf("zone 15 sends from %s", got)
	}
}

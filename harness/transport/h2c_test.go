package transport

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/strategies"
)

// connServer is a backend speaking HTTP/1.1 and h2c on one port, as an
// instance does, that counts the connections it accepted and closed and
// the requests each connection carried.
type connServer struct {
	url *url.URL

	mu     sync.Mutex
	opened int
	closed int
	protos map[string]int   // requests per protocol ("HTTP/2.0")
	per    map[net.Conn]int // requests per connection
}

type connKey struct{}

func newConnServer(t *testing.T, id int) *connServer {
	t.Helper()
	cs := &connServer{protos: map[string]int{}, per: map[net.Conn]int{}}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		cs.mu.Lock()
		cs.protos[r.Proto]++
		cs.per[c]++
		cs.mu.Unlock()
		time.Sleep(time.Millisecond) // keep some streams in flight at once
		w.Header().Set(faultyserver.InstanceHeader, strconv.Itoa(id))
		w.WriteHeader(http.StatusOK)
	}))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s.Config.Protocols = &p
	s.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		switch st {
		case http.StateNew:
			cs.opened++
		case http.StateClosed, http.StateHijacked:
			cs.closed++
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	cs.url, _ = url.Parse(s.URL)
	return cs
}

// counts returns the connections opened and closed so far and the
// requests by protocol and per connection.
func (cs *connServer) counts() (opened, closed int, protos map[string]int, per []int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	protos = map[string]int{}
	for k, v := range cs.protos {
		protos[k] = v
	}
	for _, n := range cs.per {
		per = append(per, n)
	}
	return cs.opened, cs.closed, protos, per
}

// sendAll sends requests seq from..to-1 through b, 16 at a time, and
// fails the test on any error or non-2xx answer.
func sendAll(t *testing.T, b *Client, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for seq := from; seq < to; seq++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := send(t, b, seq)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("request %d: %v, %v", seq, resp, err)
			}
			b.Take(uint64(seq))
		})
	}
	wg.Wait()
}

// TestH2CConnections: with H2C(3) and 2 replicas, every instance sees
// exactly 2×3 connections, every request arrives over HTTP/2, and without
// the option the same load stays HTTP/1.1.
func TestH2CConnections(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []Option
		wantConns int // per instance; 0: not checked
		wantProto string
	}{
		{"h2c", []Option{H2C(3)}, 6, "HTTP/2.0"},
		{"http1 by default", nil, 0, "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := []*connServer{newConnServer(t, 0), newConnServer(t, 1), newConnServer(t, 2)}
			targets := []*url.URL{servers[0].url, servers[1].url, servers[2].url}
			lbs := []*strategies.Balancer{newRoundRobin(t, 3), newRoundRobin(t, 3)}
			b := NewClient(lbs, targets, 5*time.Second, 0, tc.opts...)
			defer b.CloseIdleConnections()
			sendAll(t, b, 0, 600)
			for id, s := range servers {
				opened, _, protos, per := s.counts()
				if protos[tc.wantProto] != 200 {
					t.Errorf("instance %d: requests by protocol %v, want 200 over %s", id, protos, tc.wantProto)
				}
				if tc.wantConns == 0 {
					continue
				}
				if opened != tc.wantConns {
					t.Errorf("instance %d: %d connections, want %d", id, opened, tc.wantConns)
				}
				// Each replica sends its instance's requests to its
				// connections in turn: 100 requests over 3 connections.
				for _, n := range per {
					if n < 33 || n > 34 {
						t.Errorf("instance %d: requests per connection %v, want 33 or 34 each", id, per)
						break
					}
				}
			}
		})
	}
}

// TestH2CProxyClient: a proxy client with H2C(4) opens exactly 4
// connections to the proxy and spreads the requests evenly over them.
func TestH2CProxyClient(t *testing.T) {
	proxy := newConnServer(t, 1)
	upstream := func(string) (int, bool) { return 0, false }
	b := NewProxyClient(proxy.url, upstream, 2, 5*time.Second, 0, H2C(4))
	defer b.CloseIdleConnections()
	sendAll(t, b, 0, 200)
	opened, _, protos, per := proxy.counts()
	if opened != 4 || protos["HTTP/2.0"] != 200 {
		t.Fatalf("%d connections, requests by protocol %v; want 4 connections, 200 over HTTP/2.0", opened, protos)
	}
	for _, n := range per {
		if n != 50 {
			t.Errorf("requests per connection %v, want 50 each", per)
			break
		}
	}
}

// manualClock is a strategies.Clock moved by the test.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestH2CPinnedSockets: with a pinned strategy over h2c each pinned
// connection is one real socket, and recycling it at max_age opens a new
// socket to the newly picked instance and closes the old one.
func TestH2CPinnedSockets(t *testing.T) {
	servers := []*connServer{newConnServer(t, 0), newConnServer(t, 1), newConnServer(t, 2)}
	targets := []*url.URL{servers[0].url, servers[1].url, servers[2].url}
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	lb, err := strategies.New("round-robin+pinned(max_age=30s)", strategies.Env{N: 3, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)), Connections: 2})
	if err != nil {
		t.Fatal(err)
	}
	b := NewClient([]*strategies.Balancer{lb}, targets, 5*time.Second, 0, H2C(2))
	defer b.CloseIdleConnections()

	// Two connections, pinned to instances 0 and 1; instance 2 gets none.
	sendAll(t, b, 0, 100)
	wantOpened := []int{1, 1, 0}
	for id, s := range servers {
		if opened, _, protos, _ := s.counts(); opened != wantOpened[id] || protos["HTTP/2.0"] != 50*wantOpened[id] {
			t.Errorf("instance %d: %d connections, requests %v; want %d connections, %d requests", id, opened, protos, wantOpened[id], 50*wantOpened[id])
		}
	}

	// At max_age both are recycled: round robin goes on with 2 and 0.
	clock.advance(30 * time.Second)
	sendAll(t, b, 100, 200)
	wantOpened = []int{2, 1, 1}
	for id, s := range servers {
		if opened, _, _, _ := s.counts(); opened != wantOpened[id] {
			t.Errorf("instance %d after recycling: %d connections, want %d", id, opened, wantOpened[id])
		}
	}
	// The recycled sockets (to 0 and 1) close, now or once idle.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, c0, _, _ := servers[0].counts()
		_, c1, _, _ := servers[1].counts()
		if c0 == 1 && c1 == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recycled connections closed: instance 0 %d, instance 1 %d; want 1 each", c0, c1)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

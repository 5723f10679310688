package transport

import (
	"context"
	"net"
	"net/http/httptrace"
	"sync"
	"time"
)

// ConnRef is the client connection a request to a proxy under test went
// out on: its local port, and when the request got it. A connection-level
// proxy's log names the upstream of each client connection by that port.
// ID tells connections apart within one client: the n-th connection it
// opened (from 1), whatever port it had; every request over the same
// connection carries the same ID.
type ConnRef struct {
	Port int
	At   time.Time
	ID   uint64
}

// connIDs numbers a client's connections: a new one (not reused) takes
// the next number, which its port keeps while it lives. A port names one
// live connection of a client at a time, so a reused connection is found
// by its port.
type connIDs struct {
	mu     sync.Mutex
	last   uint64
	byPort map[int]uint64
}

func (c *connIDs) id(port int, reused bool) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.byPort[port]; ok && reused {
		return id
	}
	if c.byPort == nil {
		c.byPort = map[int]uint64{}
	}
	c.last++
	c.byPort[port] = c.last
	return c.last
}

// Conns returns how many connections a proxy client has opened.
func (b *Client) Conns() uint64 {
	b.conns.mu.Lock()
	defer b.conns.mu.Unlock()
	return b.conns.last
}

// traceConn returns ctx with a trace that records on rt the connection
// the request is sent over.
func (b *Client) traceConn(ctx context.Context, rt *Route) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if a, ok := info.Conn.LocalAddr().(*net.TCPAddr); ok {
				rt.conn.Store(&ConnRef{Port: a.Port, At: time.Now(), ID: b.conns.id(a.Port, info.Reused)})
			}
		},
	})
}

// Conn returns the client connection the request went out on, for a
// request to a proxy under test that got one.
func (r *Route) Conn() (ConnRef, bool) {
	c := r.conn.Load()
	if c == nil {
		return ConnRef{}, false
	}
	return *c, true
}

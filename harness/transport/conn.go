package transport

import (
	"context"
	"net"
	"net/http/httptrace"
	"time"
)

// ConnRef is the client connection a request to a proxy under test went
// out on: its local port, and when the request got it. A connection-level
// proxy's log names the upstream of each client connection by that port.
type ConnRef struct {
	Port int
	At   time.Time
}

// traceConn returns ctx with a trace that records on rt the connection
// the request is sent over.
func traceConn(ctx context.Context, rt *Route) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if a, ok := info.Conn.LocalAddr().(*net.TCPAddr); ok {
				rt.conn.Store(&ConnRef{Port: a.Port, At: time.Now()})
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

package faultyserver

import (
	"context"
	"net"
	"net/http"
)

// ConnContext is the http.Server ConnContext an instance's handler needs
// when a server of the caller's runs it (such as the harness's in-process
// backends) rather than Serve: it records each request's connection, so
// that a reset of scope "connection" closes an HTTP/2 connection (h2c and
// gRPC alike). Without it such a reset resets the request's stream only.
func ConnContext(ctx context.Context, c net.Conn) context.Context { return connContext(ctx, c) }

// resetRequest ends r without a response, abortively: SO_LINGER 0 on the
// TCP connection, so the peer gets an RST rather than a FIN.
//
// On HTTP/1.1 it hijacks and closes the request's connection. Where that
// is impossible (HTTP/2, recorders) the handler is aborted with
// http.ErrAbortHandler, which net/http turns into a reset stream (HTTP/2)
// or a closed connection — unless wholeConn asks for the connection of an
// HTTP/2 request too: then the connection serve recorded in r's context
// (connContext) is closed, and every stream on it fails.
func resetRequest(w http.ResponseWriter, r *http.Request, wholeConn bool) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		abortiveClose(conn)
		return
	}
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok && wholeConn {
		abortiveClose(c)
	}
	panic(http.ErrAbortHandler)
}

// abortiveClose closes conn with SO_LINGER 0 where it is (or wraps) a TCP
// connection.
func abortiveClose(conn net.Conn) {
	raw := conn
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		raw = nc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// connKey keys the connection of a request in its context (connContext).
type connKey struct{}

// connContext is an http.Server's ConnContext: it records each request's
// connection, which a connection-scope reset closes.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

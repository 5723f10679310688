package faultyserver

import (
	"context"
	"net"
)

// ConnContext is the http.Server ConnContext an instance's handler needs
// when a server of the caller's runs it (such as the harness's in-process
// backends) rather than Serve: it records each request's connection, so
// that a reset of scope "connection" closes an HTTP/2 connection (h2c and
// gRPC alike). Without it such a reset resets the request's stream only.
func ConnContext(ctx context.Context, c net.Conn) context.Context { return connContext(ctx, c) }

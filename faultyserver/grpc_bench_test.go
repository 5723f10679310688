package faultyserver

import (
	"context"
	"io"
	"net/http"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

// BenchmarkProtocols measures what one answered request costs the machine
// on each protocol an instance speaks, against the same fake server (no
// workers limit, zero service time) on loopback, from 8 clients per core:
// HTTP/1.1 on kept-alive connections, h2c and gRPC each multiplexed on
// one connection, gRPC through a sidecar in front of the server, and, for
// comparison, gRPC on grpc-go's own server (not ServeHTTP), which would
// need a port of its own. ns/op and allocs/op include the client's share.
func BenchmarkProtocols(b *testing.B) {
	s, err := New(Config{ID: 1, Service: Fixed(0)})
	if err != nil {
		b.Fatal(err)
	}
	base, _ := serveForTest(b, s)
	sc, err := NewSidecar(SidecarConfig{ID: 2, Upstream: base})
	if err != nil {
		b.Fatal(err)
	}
	scBase, _ := serveForTest(b, sc)
	// For comparison: the same service on grpc-go's own HTTP/2 server,
	// which needs a port of its own.
	native := newGRPCServer(s)
	ln := listen(b)
	go func() { _ = native.Serve(ln) }()
	defer native.Stop()

	httpGet := func(c *http.Client) func(context.Context) error {
		return func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}
	}
	grpcCall := func(url string) func(context.Context) error {
		cc := grpcConn(b, url)
		in := wrapperspb.String("/")
		return func(ctx context.Context) error {
			return cc.Invoke(ctx, GRPCMethod, in, new(wrapperspb.BytesValue))
		}
	}
	h1 := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer h1.CloseIdleConnections()
	for _, c := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"http1", httpGet(h1)},
		{"h2c", httpGet(&http.Client{Transport: h2cTransport(b)})},
		{"grpc", grpcCall(base)},
		{"grpc-sidecar", grpcCall(scBase)},
		{"grpc-native", grpcCall("http://" + ln.Addr().String())},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.do(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// BenchmarkCallCost is the client side's cost of one exchange, one at a
// time over kept-alive loopback connections to a backend that answers at
// once: an HTTP/1.1 request through the transport client against a
// gRPC call through the same transport's pick and done (the built-in
// round robin) and against grpc-go's own round_robin. ns/op is the whole
// round trip, the backend included; run it with -benchtime 2000x. The
// http1 rows with +retry and +hedge(delay=1s) put the attempt executor
// (harness/transport/policy.go) on the same exchanges: each request is one
// attempt, as it is whenever nothing fails or is slow.
func BenchmarkCallCost(b *testing.B) {
	const n = 3
	_, grpcURLs := startGRPCBackends(b, n, nil)
	var httpURLs []*url.URL
	for id := range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Lbchaos-Instance", strconv.Itoa(id))
			_, _ = w.Write([]byte("ok"))
		}))
		b.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		httpURLs = append(httpURLs, u)
	}
	newSpecBal := func(b *testing.B, spec string, urls []*url.URL) *transport.Client {
		lb, err := strategies.New(spec, strategies.Env{N: n, Rand: engine.StrategySeed(1, "bench")})
		if err != nil {
			b.Fatal(err)
		}
		return transport.NewClient([]*strategies.Balancer{lb}, urls, 5*time.Second, 0)
	}
	newBal := func(urls []*url.URL) *transport.Client { return newSpecBal(b, "round-robin", urls) }

	for _, spec := range []string{"round-robin", "round-robin+retry(attempts=3)", "round-robin+hedge(delay=1s)"} {
		b.Run("http1/"+spec, func(b *testing.B) { benchHTTP1(b, newSpecBal(b, spec, httpURLs)) })
	}
	b.Run("grpc/round-robin", func(b *testing.B) {
		c, err := newGRPCBuiltinClient("round-robin", newBal(grpcURLs), 1, grpcURLs, 1)
		if err != nil {
			b.Fatal(err)
		}
		defer c.close()
		benchCalls(b, c)
	})
	b.Run("grpc/grpc:round_robin", func(b *testing.B) {
		var armed atomic.Bool // no events
		c, err := newGRPCPolicyClient("grpc:round_robin", 1, grpcURLs, []int{0, 1, 2}, 5*time.Second, engine.NewEventLog(time.Now()), &armed)
		if err != nil {
			b.Fatal(err)
		}
		defer c.close()
		benchCalls(b, c)
	})
}

// benchHTTP1 sends GET requests one at a time through bal.
func benchHTTP1(b *testing.B, bal *transport.Client) {
	defer bal.CloseIdleConnections()
	client := &http.Client{Transport: bal}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req, _ := http.NewRequest(http.MethodGet, backendBase+"/", nil)
		req.Header.Set(transport.SeqHeader, strconv.Itoa(i))
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = resp.Body.Read(make([]byte, 16))
		resp.Body.Close()
		bal.Take(uint64(i))
	}
}

func benchCalls(b *testing.B, c grpcClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.connect(ctx)
	cancel()
	b.ReportAllocs()
	for i := uint64(0); b.Loop(); i++ {
		if r := c.call(i, "/", strategies.Request{}); r.Code != http.StatusOK {
			b.Fatalf("call %d: code %d, error %q", i, r.Code, r.Error)
		}
		c.Take(i)
	}
}

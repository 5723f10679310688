package faultyserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// retryServiceConfig is a grpc-go retry policy (gRFC A6) for every method
// of the instances' service and of the user service below: 3 attempts,
// UNAVAILABLE retried, backoffs of a millisecond or two.
const retryServiceConfig = `{"methodConfig":[{
	"name":[{"service":"` + GRPCService + `"},{"service":"user.Svc"}],
	"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.001s","maxBackoff":"0.002s",
		"backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`

// retryingConn is a grpc-go client connection to base (http://host:port)
// whose calls retry under retryServiceConfig, closed when the test ends.
func retryingConn(t testing.TB, base string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(base, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(retryServiceConfig))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// retryCalls makes calls calls of method on cc, each expected to end
// UNAVAILABLE after its attempts, and checks each one's answer: no header
// metadata (grpc-go retries only an answer whose status came in its only
// HEADERS frame, Trailers-Only), the instance id in its trailer metadata;
// after each call attempts() must have grown by 3.
func retryCalls(t *testing.T, cc *grpc.ClientConn, method string, calls int, instance string, attempts func() int64) {
	t.Helper()
	for i := range calls {
		var hdr, trl metadata.MD
		err := cc.Invoke(t.Context(), method, wrapperspb.String("/"), new(wrapperspb.BytesValue), grpc.Header(&hdr), grpc.Trailer(&trl))
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("call %d: %v, want UNAVAILABLE", i, err)
		}
		if len(hdr) != 0 {
			t.Errorf("call %d: header metadata %v, want none (a Trailers-Only answer)", i, hdr)
		}
		if got := trl.Get(GRPCInstanceKey); len(got) != 1 || got[0] != instance {
			t.Errorf("call %d: trailer %s = %v, want [%s] (trailer %v)", i, GRPCInstanceKey, got, instance, trl)
		}
		if got, want := attempts(), int64(3*(i+1)); got != want {
			t.Fatalf("after call %d: the instance received %d attempts, want %d (3 per call)", i, got, want)
		}
	}
}

// TestGRPCFailureRetried: a real grpc-go client with a retry policy
// (maxAttempts 3, UNAVAILABLE) against an instance whose fail fault
// answers UNAVAILABLE makes 3 attempts per call, each answered
// Trailers-Only with the instance, load and load report in the trailer;
// a served call is answered, once, as before: header metadata, message,
// trailer.
func TestGRPCFailureRetried(t *testing.T) {
	s, base, _ := startGRPC(t, Config{ID: 3, Workers: 1, Service: Fixed(0)})
	var calls atomic.Int64
	SetHandlerHook(s, func(string) { calls.Add(1) })
	mustSetFault(t, s, Fail{Status: 503})
	cc := retryingConn(t, base)
	const n = 4
	retryCalls(t, cc, GRPCMethod, n, "3", func() int64 { return s.Stats().Failed })
	if got := calls.Load(); got != 3*n {
		t.Errorf("the handler ran %d times, want %d", got, 3*n)
	}

	var trl metadata.MD
	err := cc.Invoke(t.Context(), GRPCMethod, wrapperspb.String("/"), new(wrapperspb.BytesValue), grpc.Trailer(&trl))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call: %v", err)
	}
	if got := trl.Get(GRPCLoadKey); len(got) != 1 || got[0] != "0" {
		t.Errorf("trailer %s = %v, want [0]", GRPCLoadKey, got)
	}
	if rep := orcaReport(t, trl); rep.Eps <= 0 {
		t.Errorf("load report eps %v, want the failures counted", rep.Eps)
	}
	for _, k := range []string{"content-length", "date"} {
		if v := trl.Get(k); len(v) != 0 {
			t.Errorf("trailer %s = %v, want none", k, v)
		}
	}

	s.ClearFault()
	r := call(t.Context(), retryingConn(t, base))
	if r.err != nil || string(r.body) != "ok\n" || r.instance != "3" {
		t.Fatalf("served call: %q from instance %q, %v; want \"ok\\n\" from 3 in the header", r.body, r.instance, r.err)
	}
	orcaReport(t, r.trailer)
	if st := s.Stats(); st.Served != 1 || st.Failed != 3*n+3 {
		t.Errorf("stats %+v, want 1 served and %d failed", st, 3*n+3)
	}
}

// TestGRPCOtherFailuresTrailersOnly: the other failures a call can get
// from the fake server (a full queue; an unknown method, TestGRPCCallServes)
// are answered Trailers-Only too.
func TestGRPCOtherFailuresTrailersOnly(t *testing.T) {
	s, base, _ := startGRPC(t, Config{ID: 6, Workers: 1, QueueLimit: 1, Service: Fixed(ms(200))})
	cc := retryingConn(t, base)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 { // one on the worker, one queued
		go func() { _ = cc.Invoke(ctx, GRPCMethod, wrapperspb.String("/"), new(wrapperspb.BytesValue)) }()
	}
	waitStats(t, s, "a busy worker and a queued call", func(st Stats) bool { return st.InFlight == 1 && st.Queued == 1 })
	var hdr, trl metadata.MD
	err := cc.Invoke(t.Context(), GRPCMethod, wrapperspb.String("/"), new(wrapperspb.BytesValue), grpc.Header(&hdr), grpc.Trailer(&trl))
	if status.Code(err) != codes.Unavailable || len(hdr) != 0 || len(trl.Get(GRPCInstanceKey)) != 1 {
		t.Errorf("queue full: %v, header %v, trailer %v; want UNAVAILABLE, Trailers-Only, naming the instance", err, hdr, trl)
	}
	if st := s.Stats(); st.Failed != 3 {
		t.Errorf("queue full: %d failed answers, want 3 (retried)", st.Failed)
	}
	cancel()
}

// unavailableService is a real grpc-go server (its own HTTP/2 server)
// answering every call of any method UNAVAILABLE once it has read the
// request, as a unary handler of grpc-go's does, Trailers-Only; it counts
// the calls.
type unavailableService struct {
	addr  string
	calls atomic.Int64
}

func startUnavailableService(t *testing.T) *unavailableService {
	t.Helper()
	u := &unavailableService{}
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		u.calls.Add(1)
		if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "upstream unavailable")
	}))
	ln := listen(t)
	u.addr = "http://" + ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(ln) }()
	t.Cleanup(func() { g.Stop(); <-done })
	return u
}

// TestGRPCSidecarFailureRetried: through the sidecar, a retrying client
// makes 3 attempts per call both when the sidecar's own fail fault
// answers and when it relays an upstream's UNAVAILABLE (Trailers-Only
// upstream, Trailers-Only still); every answer names the sidecar's
// instance in its trailer.
//
// The sidecar's fault answers without reading the request: its delay
// keeps the answer behind the client's message. grpc-go v1.85 loses the
// status of a unary call answered before its message was written: its
// Invoke returns the message write's io.EOF (grpc/grpc-go#7230), after
// retries wrapped in "max retries exhausted".
func TestGRPCSidecarFailureRetried(t *testing.T) {
	t.Run("sidecar fault", func(t *testing.T) {
		up, upBase, _ := startGRPC(t, Config{ID: 1, Service: Fixed(0)})
		sc, err := NewSidecar(SidecarConfig{ID: 9, Upstream: upBase})
		if err != nil {
			t.Fatal(err)
		}
		base, _ := serveForTest(t, sc)
		if err := sc.SetFault(Fail{Status: 503, Delay: Duration(ms(5))}); err != nil {
			t.Fatal(err)
		}
		retryCalls(t, retryingConn(t, base), GRPCMethod, 3, "9", func() int64 { return sc.Stats().Failed })
		if st := up.Stats(); st.Served+st.Failed != 0 {
			t.Errorf("upstream stats %+v, want nothing forwarded", st)
		}
	})
	t.Run("upstream failure", func(t *testing.T) {
		up := startUnavailableService(t)
		sc, err := NewSidecar(SidecarConfig{ID: 5, Upstream: up.addr})
		if err != nil {
			t.Fatal(err)
		}
		base, _ := serveForTest(t, sc)
		retryCalls(t, retryingConn(t, base), "/user.Svc/Get", 3, "5", up.calls.Load)
		if st := sc.Stats(); st.Failed != 9 {
			t.Errorf("sidecar stats %+v, want 9 failed (3 calls of 3 attempts)", st)
		}
	})
	t.Run("fake server upstream", func(t *testing.T) {
		up, upBase, _ := startGRPC(t, Config{ID: 2, Service: Fixed(0)})
		mustSetFault(t, up, Fail{Status: 503})
		sc, err := NewSidecar(SidecarConfig{ID: 4, Upstream: upBase})
		if err != nil {
			t.Fatal(err)
		}
		base, _ := serveForTest(t, sc)
		retryCalls(t, retryingConn(t, base), GRPCMethod, 2, "4", func() int64 { return up.Stats().Failed })
	})
}

// TestGRPCTrailersOnlyOnTheWire: the fake server's failure is one HEADERS
// frame ending the stream: status 200, content type application/grpc,
// grpc-status and grpc-message, the instance; no body, no trailers.
func TestGRPCTrailersOnlyOnTheWire(t *testing.T) {
	s, base, _ := startGRPC(t, Config{ID: 7, Service: Fixed(0)})
	mustSetFault(t, s, Fail{Status: 503, GRPCCode: "RESOURCE_EXHAUSTED"})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+GRPCMethod,
		strings.NewReader("\x00\x00\x00\x00\x00")) // one empty message
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	resp, err := h2cTransport(t).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "application/grpc" ||
		h.Get("Grpc-Status") != "8" || h.Get("Grpc-Message") != "injected fault" || h.Get(InstanceHeader) != "7" {
		t.Errorf("answer %d, header %v; want 200 with grpc-status 8 and the instance", resp.StatusCode, h)
	}
	// Without a Content-Length header, a ContentLength of 0 is what
	// net/http's HTTP/2 client makes of END_STREAM on the HEADERS frame.
	if body, err := io.ReadAll(resp.Body); err != nil || len(body) != 0 || resp.ContentLength != 0 || len(resp.Trailer) != 0 {
		t.Errorf("body %q (%v), content length %d, trailer %v; want the stream ended with its headers",
			body, err, resp.ContentLength, resp.Trailer)
	}
	for _, k := range []string{"Trailer", "Content-Length", "Date"} {
		if v, ok := h[k]; ok {
			t.Errorf("header %s: %v, want none", k, v)
		}
	}
}

package faultyserver

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// grpcConn is a grpc-go client connection to base (http://host:port),
// closed when the test ends.
func grpcConn(t testing.TB, base string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(base, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// grpcResult is one call of GRPCMethod.
type grpcResult struct {
	body     []byte
	header   metadata.MD
	trailer  metadata.MD
	err      error
	instance string // GRPCInstanceKey from the header, else (Trailers-Only) the trailer
}

func (r grpcResult) code() codes.Code { return status.Code(r.err) }

// call invokes GRPCMethod on cc.
func call(ctx context.Context, cc *grpc.ClientConn) grpcResult {
	var r grpcResult
	out := new(wrapperspb.BytesValue)
	r.err = cc.Invoke(ctx, GRPCMethod, wrapperspb.String("/"), out, grpc.Header(&r.header), grpc.Trailer(&r.trailer))
	r.body = out.GetValue()
	if v := r.header.Get(GRPCInstanceKey); len(v) == 1 {
		r.instance = v[0]
	} else if v := r.trailer.Get(GRPCInstanceKey); len(v) == 1 {
		r.instance = v[0]
	}
	return r
}

// orcaReport decodes the ORCA load report in md, failing the test when
// there is not exactly one.
func orcaReport(t testing.TB, md metadata.MD) *v3orcapb.OrcaLoadReport {
	t.Helper()
	vs := md.Get(ORCATrailerKey)
	if len(vs) != 1 {
		t.Fatalf("%s: %d values, want 1 (metadata %v)", ORCATrailerKey, len(vs), md)
	}
	rep := new(v3orcapb.OrcaLoadReport)
	if err := proto.Unmarshal([]byte(vs[0]), rep); err != nil {
		t.Fatalf("%s: %v", ORCATrailerKey, err)
	}
	return rep
}

// startGRPC serves a Server for cfg on a loopback port and returns it,
// its base URL and a gRPC connection to it.
func startGRPC(t testing.TB, cfg Config) (*Server, string, *grpc.ClientConn) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serveForTest(t, s)
	return s, base, grpcConn(t, base)
}

// TestGRPCCallServes: a call is served on a worker for its service time,
// answered with the HTTP body, the instance and load in the header
// metadata and an ORCA load report whose utilization and rates fit the
// calls made.
func TestGRPCCallServes(t *testing.T) {
	s, _, cc := startGRPC(t, Config{ID: 4, Workers: 2, Service: Fixed(ms(20))})
	ctx := t.Context()
	const n = 5
	var r grpcResult
	began := time.Now()
	for range n {
		if r = call(ctx, cc); r.err != nil {
			t.Fatalf("call: %v", r.err)
		}
		if took := time.Since(began); took < ms(20) {
			t.Fatalf("call took %v, want at least the 20ms service time", took)
		}
	}
	elapsed := time.Since(began)
	if string(r.body) != "ok\n" || r.instance != "4" {
		t.Errorf("answer %q from instance %q, want \"ok\\n\" from 4", r.body, r.instance)
	}
	if got := r.header.Get(GRPCLoadKey); len(got) != 1 || got[0] != "0" {
		t.Errorf("%s = %v, want [0] (nothing else in the instance)", GRPCLoadKey, got)
	}
	rep := orcaReport(t, r.trailer)
	// n calls in about elapsed (under the window's second), one at a time
	// on one of 2 workers: a utilization near 1/2 and n/elapsed calls a
	// second, measured over at least the calls' span.
	wantRPS := n / max(elapsed.Seconds(), loadSlot.Seconds())
	if rep.RpsFractional < 0.25*wantRPS || rep.RpsFractional > 1.05*wantRPS {
		t.Errorf("rps_fractional %v, want about %.1f", rep.RpsFractional, wantRPS)
	}
	if rep.Eps != 0 {
		t.Errorf("eps %v, want 0", rep.Eps)
	}
	if u := rep.ApplicationUtilization; u < 0.1 || u > 0.55 {
		t.Errorf("application_utilization %v, want within [0.1,0.55] (one of 2 workers busy most of the time)", u)
	}
	if v, ok := rep.NamedMetrics[ORCAInFlightMetric]; !ok || v != 0 {
		t.Errorf("named_metrics[%s] = %v (present %v), want 0", ORCAInFlightMetric, v, ok)
	}
	var trl metadata.MD // a failure is answered Trailers-Only
	err := cc.Invoke(ctx, "/other.Svc/Get", wrapperspb.String("/"), new(wrapperspb.BytesValue), grpc.Trailer(&trl))
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), GRPCMethod) || len(trl.Get(GRPCInstanceKey)) != 1 {
		t.Errorf("another method: %v, trailer %v; want Unimplemented naming %s, from the instance", err, trl, GRPCMethod)
	}
	st := s.Stats()
	if st.Served != n || st.Failed != 0 || st.BusyS < float64(n)*0.02 {
		t.Errorf("stats %+v, want %d served and busy >= %v s", st, n, float64(n)*0.02)
	}
}

// TestGRPCFailCodes: fail answers UNAVAILABLE by default and the code it
// names otherwise, after its delay and without a worker, with the
// instance metadata and a load report counting the errors.
func TestGRPCFailCodes(t *testing.T) {
	s, _, cc := startGRPC(t, Config{ID: 2, Workers: 1, Service: Fixed(0)})
	ctx := t.Context()
	for _, tc := range []struct {
		fault Fail
		want  codes.Code
	}{
		{Fail{Status: 503}, codes.Unavailable},
		{Fail{Status: 429, Delay: Duration(ms(15)), GRPCCode: "RESOURCE_EXHAUSTED"}, codes.ResourceExhausted},
		{Fail{Status: 500, GRPCCode: "INTERNAL"}, codes.Internal},
	} {
		mustSetFault(t, s, tc.fault)
		began := time.Now()
		r := call(ctx, cc)
		if r.code() != tc.want || r.instance != "2" {
			t.Errorf("%s: %v from instance %q, want %v from 2", Describe(tc.fault), r.err, r.instance, tc.want)
		}
		if took := time.Since(began); took < time.Duration(tc.fault.Delay) {
			t.Errorf("%s: answered after %v, before the delay", Describe(tc.fault), took)
		}
		if rep := orcaReport(t, r.trailer); rep.Eps <= 0 || rep.Eps != rep.RpsFractional {
			t.Errorf("%s: eps %v, rps %v; want every answer an error", Describe(tc.fault), rep.Eps, rep.RpsFractional)
		}
	}
	if st := s.Stats(); st.Failed != 3 || st.Served != 0 || st.BusyS != 0 {
		t.Errorf("stats %+v, want 3 failed and no worker time", st)
	}
}

// TestGRPCErrorRate: error-rate fails about its share of calls with its
// code, drawn from the seeded source, as over HTTP.
func TestGRPCErrorRate(t *testing.T) {
	s, _, cc := startGRPC(t, Config{Workers: 4, Service: Fixed(0), Seed: 7})
	mustSetFault(t, s, ErrorRate{P: 0.3, Status: 503, GRPCCode: "ABORTED"})
	const n = 400
	failed := 0
	for range n {
		switch r := call(t.Context(), cc); r.code() {
		case codes.OK:
		case codes.Aborted:
			failed++
		default:
			t.Fatalf("call: %v, want OK or Aborted", r.err)
		}
	}
	// Binomial(400, 0.3): mean 120, sd 9.2; the seed fixes the draw.
	if failed < 90 || failed > 150 {
		t.Errorf("%d of %d calls failed, want about 30%%", failed, n)
	}
	if st := s.Stats(); st.Failed != int64(failed) || st.Served != int64(n-failed) {
		t.Errorf("stats %+v, want %d failed and %d served", st, failed, n-failed)
	}
}

// TestGRPCHang: a hanging call is held until the client's deadline, then
// counts as dropped; at shutdown a hanging call ends UNAVAILABLE at once.
func TestGRPCHang(t *testing.T) {
	s, _, cc := startGRPC(t, Config{Workers: 1, Service: Fixed(0)})
	mustSetFault(t, s, Hang{})
	began := time.Now() // before the deadline is set, which it is measured against
	ctx, cancel := context.WithTimeout(t.Context(), ms(150))
	defer cancel()
	done := make(chan grpcResult, 1)
	go func() { done <- call(ctx, cc) }()
	time.Sleep(ms(50))
	if st := s.Stats(); st.Dropped != 0 || st.Served+st.Failed != 0 {
		t.Errorf("stats while hanging %+v, want the call held: nothing answered or dropped", st)
	}
	r := <-done
	if r.code() != codes.DeadlineExceeded || time.Since(began) < ms(150) {
		t.Errorf("hanging call: %v after %v, want DeadlineExceeded at the 150ms deadline", r.err, time.Since(began))
	}
	waitStats(t, s, "the hanging call dropped", func(st Stats) bool { return st.Dropped == 1 })
}

// TestGRPCHangEndsAtShutdown: shutting the instance down ends a hanging
// call with UNAVAILABLE at once.
func TestGRPCHangEndsAtShutdown(t *testing.T) {
	s, err := New(Config{ID: 1, Workers: 1, Service: Fixed(0), InitialFault: Hang{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, s, ln, nil) }()
	cc := grpcConn(t, "http://"+ln.Addr().String())
	done := make(chan grpcResult, 1)
	go func() { done <- call(t.Context(), cc) }()
	time.Sleep(ms(50))
	began := time.Now()
	cancel()
	r := <-done
	if r.code() != codes.Unavailable || r.instance != "1" {
		t.Errorf("hanging call at shutdown: %v from %q, want Unavailable from instance 1", r.err, r.instance)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("shutdown took %v with a hanging call, want it released at once", took)
	}
}

// TestGRPCResetScope: on one ClientConn (one HTTP/2 connection), a call in
// progress survives a stream-scope reset of another call and fails with a
// connection-scope one, on the fake server and on the sidecar alike.
// grpc-go reports a reset stream (RST_STREAM INTERNAL_ERROR, which
// net/http sends for an aborted handler) as INTERNAL, and a closed
// connection as UNAVAILABLE.
func TestGRPCResetScope(t *testing.T) {
	instances := []struct {
		name  string
		start func(t *testing.T) (controlled, *grpc.ClientConn)
	}{
		{"server", func(t *testing.T) (controlled, *grpc.ClientConn) {
			s, _, cc := startGRPC(t, Config{ID: 1, Workers: 4, Service: Fixed(0)})
			return s, cc
		}},
		{"sidecar", func(t *testing.T) (controlled, *grpc.ClientConn) {
			up, err := New(Config{Workers: 4, Service: Fixed(0)})
			if err != nil {
				t.Fatal(err)
			}
			upBase, _ := serveForTest(t, up)
			return startGRPCSidecar(t, SidecarConfig{ID: 1}, upBase)
		}},
	}
	for _, in := range instances {
		for _, tc := range []struct {
			scope       string
			want        codes.Code
			slowSurvive bool
		}{{ResetStream, codes.Internal, true}, {ResetConnection, codes.Unavailable, false}} {
			t.Run(in.name+"/"+tc.scope, func(t *testing.T) {
				s, cc := in.start(t)
				ctx := t.Context()
				if r := call(ctx, cc); r.err != nil { // connect
					t.Fatal(r.err)
				}
				mustSet(t, s, Slow{Latency: Duration(ms(400))})
				slow := make(chan grpcResult, 1)
				go func() { slow <- call(ctx, cc) }()
				waitFor(t, func() bool { return s.Stats().InFlight == 1 })
				mustSet(t, s, Reset{Scope: tc.scope})
				r := call(ctx, cc)
				if r.code() != tc.want {
					t.Errorf("call under reset: %v, want %v", r.err, tc.want)
				}
				sr := <-slow
				if tc.slowSurvive && sr.err != nil {
					t.Errorf("the call in progress on the same connection failed with a stream reset: %v", sr.err)
				}
				if !tc.slowSurvive && sr.code() != codes.Unavailable {
					t.Errorf("the call in progress on the same connection: %v, want Unavailable after a connection reset", sr.err)
				}
				s.ClearFault()
				if r := call(ctx, cc); r.err != nil {
					t.Errorf("call after the reset: %v, want the ClientConn to recover", r.err)
				}
			})
		}
	}
}

// mustSet sets f on a Server or Sidecar.
func mustSet(t testing.TB, s controlled, f Fault) {
	t.Helper()
	if err := s.SetFault(f); err != nil {
		t.Fatalf("SetFault(%#v): %v", f, err)
	}
}

// TestGRPCSharesThePort: HTTP/1.1, h2c and gRPC on one port reach the
// same instance and counters.
func TestGRPCSharesThePort(t *testing.T) {
	s, base, cc := startGRPC(t, Config{ID: 6, Workers: 2, Service: Fixed(0)})
	h1 := &http.Client{Transport: &http.Transport{}}
	defer h1.CloseIdleConnections()
	h2 := &http.Client{Transport: h2cTransport(t)}
	for _, tc := range []struct {
		name string
		c    *http.Client
		want int
	}{{"HTTP/1.1", h1, 1}, {"h2c", h2, 2}} {
		r := do(t.Context(), tc.c, http.MethodGet, base+"/", nil)
		if r.err != nil || r.status != http.StatusOK || r.header.Get(InstanceHeader) != "6" {
			t.Errorf("%s: %d from %q, %v; want 200 from instance 6", tc.name, r.status, r.header.Get(InstanceHeader), r.err)
		}
	}
	// gRPC-Web is not gRPC: an h2c request with its content type is served
	// as HTTP.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/", strings.NewReader("x"))
	req.Header.Set("Content-Type", "application/grpc-web")
	if resp, err := h2.Do(req); err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Grpc-Status") != "" {
		t.Errorf("h2c application/grpc-web: %v, %v; want a plain 200", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := call(t.Context(), cc); r.err != nil || r.instance != "6" {
		t.Errorf("gRPC: %v from %q", r.err, r.instance)
	}
	if st := s.Stats(); st.Served != 4 {
		t.Errorf("served %d, want 4 (HTTP/1.1, h2c, h2c gRPC-Web, gRPC)", st.Served)
	}
}

// TestGRPCCodeValidation: grpc_code takes the spec's names; a bad one is
// refused with the field named, over the control API too, and leaves the
// current fault as it was.
func TestGRPCCodeValidation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want codes.Code
		err  string
	}{
		{"", codes.Unavailable, ""},
		{"RESOURCE_EXHAUSTED", codes.ResourceExhausted, ""},
		{"UNAUTHENTICATED", codes.Unauthenticated, ""},
		{"CANCELLED", codes.Canceled, ""},
		{"OK", 0, `unknown gRPC status code "OK"`},
		{"unavailable", 0, `unknown gRPC status code "unavailable"`},
	} {
		got, err := ParseGRPCCode(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseGRPCCode(%q): %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseGRPCCode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseFault([]byte(`{"mode":"error-rate","p":0.1,"grpc_code":"NOPE"}`)); err == nil || !strings.HasPrefix(err.Error(), "grpc_code: ") {
		t.Errorf("ParseFault with a bad grpc_code: %v, want an error starting with grpc_code:", err)
	}
	f, err := ParseFault([]byte(`{"mode":"fail","grpc_code":"DATA_LOSS"}`))
	if err != nil || f.(Fail).GRPCCode != "DATA_LOSS" {
		t.Fatalf("ParseFault: %#v, %v", f, err)
	}
	if a := f.Plan(0, nil); a.GRPCCode != codes.DataLoss {
		t.Errorf("plan %+v, want GRPCCode DataLoss", a)
	}

	s, base, _ := startGRPC(t, Config{Workers: 1, Service: Fixed(0)})
	mustSetFault(t, s, Fail{Status: 503})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, base+FaultPath, strings.NewReader(`{"mode":"fail","grpc_code":"BAD"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("PUT a bad grpc_code: %d, want 400", resp.StatusCode)
	}
	if f, ok := s.Fault().(Fail); !ok || f.GRPCCode != "" || f.Status != 503 {
		t.Errorf("fault after a refused PUT: %#v, want the earlier fail", s.Fault())
	}
}

// decodeORCAHeader decodes a raw endpoint-load-metrics-bin header value
// as it travels in HTTP/2 (base64, padded or not).
func decodeORCAHeader(v string) (*v3orcapb.OrcaLoadReport, error) {
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return nil, err
	}
	rep := new(v3orcapb.OrcaLoadReport)
	return rep, proto.Unmarshal(b, rep)
}

// listen opens a loopback listener.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestGRPCQueueFull: a call finding the queue full is UNAVAILABLE at once,
// carrying the load (the calls holding the worker and queued), as HTTP's
// 503 does.
func TestGRPCQueueFull(t *testing.T) {
	s, _, cc := startGRPC(t, Config{ID: 5, Workers: 1, QueueLimit: 1, Service: Fixed(ms(300))})
	ctx := t.Context()
	held := make(chan grpcResult, 2)
	for range 2 {
		go func() { held <- call(ctx, cc) }()
	}
	waitStats(t, s, "a call on the worker and one queued", func(st Stats) bool { return st.InFlight == 1 && st.Queued == 1 })
	began := time.Now()
	r := call(ctx, cc)
	if r.code() != codes.Unavailable || r.instance != "5" || time.Since(began) > ms(200) {
		t.Errorf("call at a full queue: %v from %q after %v, want Unavailable at once from 5", r.err, r.instance, time.Since(began))
	}
	if got := r.trailer.Get(GRPCLoadKey); len(got) != 1 || got[0] != "2" {
		t.Errorf("%s = %v, want [2]", GRPCLoadKey, got)
	}
	if v := orcaReport(t, r.trailer).NamedMetrics[ORCAInFlightMetric]; v != 2 {
		t.Errorf("named_metrics[%s] = %v, want 2", ORCAInFlightMetric, v)
	}
	for range 2 {
		if r := <-held; r.err != nil {
			t.Errorf("held call: %v", r.err)
		}
	}
}

// TestConnContextOnOwnServer: a Server run by an http.Server of the
// caller's, with the instance's protocols and ConnContext, serves gRPC and
// closes the whole connection on a connection-scope reset.
func TestConnContextOnOwnServer(t *testing.T) {
	s, err := New(Config{ID: 3, Workers: 2, Service: Fixed(0)})
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	hs := &http.Server{Handler: s, Protocols: serveProtocols(), ConnContext: ConnContext}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { s.Close(); hs.Close() })
	cc := grpcConn(t, "http://"+ln.Addr().String())
	ctx := t.Context()
	if r := call(ctx, cc); r.err != nil || r.instance != "3" {
		t.Fatalf("call: %v from %q", r.err, r.instance)
	}
	mustSetFault(t, s, Slow{Latency: Duration(ms(400))})
	slow := make(chan grpcResult, 1)
	go func() { slow <- call(ctx, cc) }()
	waitStats(t, s, "the slow call on a worker", func(st Stats) bool { return st.InFlight == 1 })
	mustSetFault(t, s, Reset{Scope: ResetConnection})
	if r := call(ctx, cc); r.code() != codes.Unavailable {
		t.Errorf("call under a connection reset: %v, want Unavailable", r.err)
	}
	if r := <-slow; r.code() != codes.Unavailable {
		t.Errorf("the call in progress on the connection: %v, want Unavailable", r.err)
	}
}

// TestGRPCLoadReportUnderLoad: under a steady 100 calls a second of 10ms
// each on 2 workers, the load reports after a second say about 100 rps and
// a utilization of about 0.5 (100 × 10ms of work per second over 2 workers).
func TestGRPCLoadReportUnderLoad(t *testing.T) {
	_, _, cc := startGRPC(t, Config{Workers: 2, Service: Fixed(ms(10))})
	ctx := t.Context()
	results := make(chan grpcResult, 200)
	tick := time.NewTicker(ms(10))
	defer tick.Stop()
	began := time.Now()
	n := 0
	for time.Since(began) < 1300*time.Millisecond {
		<-tick.C
		n++
		go func() { results <- call(ctx, cc) }()
	}
	var rps, util []float64
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatalf("call: %v", r.err)
		}
		rep := orcaReport(t, r.trailer)
		rps, util = append(rps, rep.RpsFractional), append(util, rep.ApplicationUtilization)
	}
	// The last reports cover a full window of steady load.
	last := func(v []float64) float64 {
		sum := 0.0
		for _, x := range v[len(v)-10:] {
			sum += x
		}
		return sum / 10
	}
	t.Logf("%d calls; last reports: rps %.1f, utilization %.2f", n, last(rps), last(util))
	if r := last(rps); r < 70 || r > 115 {
		t.Errorf("rps_fractional %.1f, want about 100", r)
	}
	if u := last(util); u < 0.35 || u > 0.65 {
		t.Errorf("application_utilization %.2f, want about 0.5", u)
	}
}

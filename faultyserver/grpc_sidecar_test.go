package faultyserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// userService is a real grpc-go server of a service the sidecar knows
// nothing of, served on its own loopback port by grpc-go's HTTP/2 server.
// Every method is a bidirectional stream of StringValues:
//
//	/user.Svc/Echo:  header x-up-header: h; each message back upper-cased;
//	                 trailer x-up-trailer: t and x-seen-client: the
//	                 request's x-client metadata
//	/user.Svc/Fail:  NOT_FOUND, with trailer x-up-trailer: t
//	/user.Svc/Block: waits for the client to go away, then counts it
type userService struct {
	addr      string
	cancelled atomic.Int64
}

func startUserService(t *testing.T) *userService {
	t.Helper()
	u := &userService{}
	g := grpc.NewServer(grpc.UnknownServiceHandler(u.handle))
	ln := listen(t)
	u.addr = "http://" + ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(ln) }()
	t.Cleanup(func() { g.Stop(); <-done })
	return u
}

func (u *userService) handle(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	switch method {
	case "/user.Svc/Fail":
		ss.SetTrailer(metadata.Pairs("x-up-trailer", "t"))
		return status.Error(codes.NotFound, "nope")
	case "/user.Svc/Block":
		<-ss.Context().Done()
		u.cancelled.Add(1)
		return ss.Context().Err()
	}
	md, _ := metadata.FromIncomingContext(ss.Context())
	if err := ss.SendHeader(metadata.Pairs("x-up-header", "h")); err != nil {
		return err
	}
	for {
		in := new(wrapperspb.StringValue)
		if err := ss.RecvMsg(in); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		if err := ss.SendMsg(wrapperspb.String(strings.ToUpper(in.Value))); err != nil {
			return err
		}
	}
	ss.SetTrailer(metadata.Pairs("x-up-trailer", "t", "x-seen-client", strings.Join(md.Get("x-client"), ",")))
	return nil
}

var bidi = &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}

// startGRPCSidecar serves a Sidecar for cfg in front of upstream and
// returns it and a gRPC connection to it.
func startGRPCSidecar(t *testing.T, cfg SidecarConfig, upstream string) (*Sidecar, *grpc.ClientConn) {
	t.Helper()
	cfg.Upstream = upstream
	s, err := NewSidecar(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serveForTest(t, s)
	return s, grpcConn(t, base)
}

// TestGRPCSidecarRelaysStreams: a bidirectional stream of a method the
// sidecar does not know goes through message by message, with the
// client's metadata, the upstream's header and trailer metadata, the
// sidecar's instance id and a single ORCA load report; an upstream status
// passes through with its trailer.
func TestGRPCSidecarRelaysStreams(t *testing.T) {
	up := startUserService(t)
	s, cc := startGRPCSidecar(t, SidecarConfig{ID: 8}, up.addr)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-client", "c1")
	st, err := cc.NewStream(ctx, bidi, "/user.Svc/Echo")
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"one", "two", "three"} {
		// One message out, its answer back before the next goes: nothing
		// is buffered to the end of the call.
		if err := st.SendMsg(wrapperspb.String(word)); err != nil {
			t.Fatal(err)
		}
		got := new(wrapperspb.StringValue)
		if err := st.RecvMsg(got); err != nil || got.Value != strings.ToUpper(word) {
			t.Fatalf("echo of %q: %q, %v", word, got.Value, err)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := st.RecvMsg(new(wrapperspb.StringValue)); err != io.EOF {
		t.Fatalf("end of stream: %v, want io.EOF", err)
	}
	hdr, _ := st.Header()
	tr := st.Trailer()
	if got := hdr.Get(GRPCInstanceKey); len(got) != 1 || got[0] != "8" {
		t.Errorf("%s = %v, want [8] (the sidecar's)", GRPCInstanceKey, got)
	}
	if got := hdr.Get("x-up-header"); len(got) != 1 || got[0] != "h" {
		t.Errorf("x-up-header = %v, want [h]", got)
	}
	if tr.Get("x-up-trailer")[0] != "t" || tr.Get("x-seen-client")[0] != "c1" {
		t.Errorf("trailer %v, want x-up-trailer t and x-seen-client c1", tr)
	}
	if rep := orcaReport(t, tr); rep.RpsFractional <= 0 || rep.Eps != 0 || rep.ApplicationUtilization <= 0 {
		t.Errorf("load report %v, want a positive rate and utilization and no errors", rep)
	}

	fs, err := cc.NewStream(t.Context(), bidi, "/user.Svc/Fail")
	if err != nil {
		t.Fatal(err)
	}
	_ = fs.CloseSend()
	err = fs.RecvMsg(new(wrapperspb.StringValue))
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != "nope" {
		t.Errorf("upstream's failure: %v, want NotFound nope", err)
	}
	// grpc-go's server answers this status Trailers-Only, and so does the
	// sidecar, with its instance id in that one block.
	if tr := fs.Trailer(); len(tr.Get("x-up-trailer")) != 1 || len(tr.Get(ORCATrailerKey)) != 1 || len(tr.Get(GRPCInstanceKey)) != 1 {
		t.Errorf("trailer of a failed call %v, want the upstream's x-up-trailer, one load report and the instance id", tr)
	}
	if hdr, _ := fs.Header(); len(hdr) != 0 {
		t.Errorf("header of a failed call %v, want none (Trailers-Only)", hdr)
	}
	if got := s.Stats(); got.Served != 1 || got.Failed != 1 {
		t.Errorf("stats %+v, want 1 served and 1 failed", got)
	}
}

// TestGRPCSidecarCancel: a client giving up cancels the upstream's call.
// (No deadline: grpc-timeout would reach the upstream and end its call
// on its own.)
func TestGRPCSidecarCancel(t *testing.T) {
	up := startUserService(t)
	s, cc := startGRPCSidecar(t, SidecarConfig{}, up.addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	st, err := cc.NewStream(ctx, bidi, "/user.Svc/Block")
	if err != nil {
		t.Fatal(err)
	}
	waitSidecar(t, s, "the call forwarded", func(st Stats) bool { return st.InFlight == 1 })
	time.AfterFunc(ms(50), cancel)
	if err := st.RecvMsg(new(wrapperspb.StringValue)); status.Code(err) != codes.Canceled {
		t.Errorf("blocked call: %v, want Canceled", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for up.cancelled.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the upstream's call was not cancelled")
		}
		time.Sleep(time.Millisecond)
	}
	waitSidecar(t, s, "the call dropped", func(st Stats) bool { return st.Dropped == 1 && st.InFlight == 0 })
}

// TestGRPCSidecarFaults: in front of a faultyserver Server, the sidecar
// forwards GRPCMethod and answers its own faults as gRPC statuses with its
// instance id and a load report, as the Server does.
func TestGRPCSidecarFaults(t *testing.T) {
	upSrv, err := New(Config{ID: 1, Workers: 2, Service: Fixed(ms(5))})
	if err != nil {
		t.Fatal(err)
	}
	upBase, _ := serveForTest(t, upSrv)
	s, cc := startGRPCSidecar(t, SidecarConfig{ID: 9}, upBase)
	ctx := t.Context()

	r := call(ctx, cc)
	if r.err != nil || string(r.body) != "ok\n" || r.instance != "9" {
		t.Fatalf("forwarded call: %q from %q, %v; want ok from the sidecar, 9", r.body, r.instance, r.err)
	}
	if rep := orcaReport(t, r.trailer); rep.RpsFractional <= 0 || rep.ApplicationUtilization <= 0 {
		t.Errorf("load report %v, want the sidecar's rate and utilization", rep)
	}

	for _, tc := range []struct {
		fault Fault
		want  codes.Code
	}{
		{Fail{Status: 503}, codes.Unavailable},
		{Fail{Status: 429, GRPCCode: "RESOURCE_EXHAUSTED"}, codes.ResourceExhausted},
		{ErrorRate{P: 1, Status: 500, GRPCCode: "ABORTED"}, codes.Aborted},
		{Reset{}, codes.Internal},
	} {
		mustSetSidecarFault(t, s, tc.fault)
		r := call(ctx, cc)
		if r.code() != tc.want {
			t.Errorf("%s: %v, want %v", Describe(tc.fault), r.err, tc.want)
			continue
		}
		if _, isReset := tc.fault.(Reset); isReset {
			continue
		}
		if r.instance != "9" {
			t.Errorf("%s: %s = %q, want 9", Describe(tc.fault), GRPCInstanceKey, r.instance)
		}
		if rep := orcaReport(t, r.trailer); rep.Eps <= 0 {
			t.Errorf("%s: load report %v, want errors counted", Describe(tc.fault), rep)
		}
	}

	mustSetSidecarFault(t, s, Hang{})
	hctx, cancel := context.WithTimeout(ctx, ms(100))
	defer cancel()
	if r := call(hctx, cc); r.code() != codes.DeadlineExceeded {
		t.Errorf("hang: %v, want DeadlineExceeded", r.err)
	}
	s.ClearFault()
	if r := call(ctx, cc); r.err != nil {
		t.Errorf("after the faults: %v", r.err)
	}
	if st := upSrv.Stats(); st.Served != 2 {
		t.Errorf("upstream served %d, want 2 (faults answered by the sidecar)", st.Served)
	}
	waitSidecar(t, s, "the counts", func(st Stats) bool {
		return st.Served == 2 && st.Failed == 4 && st.Dropped == 1
	})
}

// TestGRPCSidecarUpstreamDown: an unreachable upstream is UNAVAILABLE,
// from the sidecar.
func TestGRPCSidecarUpstreamDown(t *testing.T) {
	ln := listen(t)
	addr := "http://" + ln.Addr().String()
	ln.Close()
	_, cc := startGRPCSidecar(t, SidecarConfig{ID: 3}, addr)
	r := call(t.Context(), cc)
	if r.code() != codes.Unavailable || !strings.Contains(status.Convert(r.err).Message(), "upstream") || r.instance != "3" {
		t.Errorf("call with the upstream down: %v from %q; want Unavailable naming the upstream, from the sidecar 3", r.err, r.instance)
	}
}

// TestGRPCSidecarSeparateUpstream: with GRPCUpstream set, gRPC calls go
// there and every other request to Upstream.
func TestGRPCSidecarSeparateUpstream(t *testing.T) {
	up := startUserService(t)
	web := startUpstream(t, echo)
	s, err := NewSidecar(SidecarConfig{ID: 2, Upstream: web.ts.URL, GRPCUpstream: up.addr})
	if err != nil {
		t.Fatal(err)
	}
	base, h1 := serveForTest(t, s)
	cc := grpcConn(t, base)
	st, err := cc.NewStream(t.Context(), bidi, "/user.Svc/Echo")
	if err != nil {
		t.Fatal(err)
	}
	got := new(wrapperspb.StringValue)
	if err := st.SendMsg(wrapperspb.String("hi")); err != nil {
		t.Fatal(err)
	}
	if err := st.RecvMsg(got); err != nil || got.Value != "HI" {
		t.Errorf("gRPC through the sidecar: %q, %v; want HI from the gRPC upstream", got.Value, err)
	}
	_ = st.CloseSend()
	r := do(t.Context(), &http.Client{Transport: h1}, http.MethodGet, base+"/p", nil)
	if r.err != nil || r.status != http.StatusCreated || web.hits.Load() != 1 {
		t.Errorf("HTTP through the sidecar: %d, %v, upstream hits %d; want the HTTP upstream's 201", r.status, r.err, web.hits.Load())
	}
}

func TestGRPCUpstreamFlag(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags Flags
		want  string
	}{
		{"without --upstream", Flags{GRPCUpstream: "http://127.0.0.1:1"}, "--grpc-upstream: applies only with --upstream"},
		{"bad address", Flags{Upstream: "http://127.0.0.1:1", GRPCUpstream: "127.0.0.1:2"}, `--grpc-upstream: want http://host:port, got "127.0.0.1:2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := DefaultFlags
			f.Upstream, f.GRPCUpstream = tc.flags.Upstream, tc.flags.GRPCUpstream
			var err error
			if f.Upstream == "" {
				_, err = f.Config()
			} else {
				_, err = f.SidecarConfig()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := (SidecarConfig{Upstream: "http://127.0.0.1:1", GRPCUpstream: "x"}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "grpc_upstream: ") {
		t.Errorf("Validate: %v, want an error naming grpc_upstream", err)
	}
}

// TestGRPCSidecarSlowFactor: slow with a factor holds a relayed call's
// answer until factor times the upstream's own time.
func TestGRPCSidecarSlowFactor(t *testing.T) {
	upSrv, err := New(Config{Workers: 2, Service: Fixed(ms(30))})
	if err != nil {
		t.Fatal(err)
	}
	upBase, _ := serveForTest(t, upSrv)
	s, cc := startGRPCSidecar(t, SidecarConfig{ID: 1}, upBase)
	mustSetSidecarFault(t, s, Slow{Factor: 4})
	began := time.Now()
	r := call(t.Context(), cc)
	took := time.Since(began)
	if r.err != nil || string(r.body) != "ok\n" {
		t.Fatalf("call: %q, %v", r.body, r.err)
	}
	if took < ms(120) || took > ms(400) {
		t.Errorf("call took %v, want about 4 × 30ms", took)
	}
	if len(r.trailer.Get(ORCATrailerKey)) != 1 {
		t.Errorf("trailer %v, want one load report", r.trailer)
	}
}

func TestPercentEncode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"upstream: dial tcp 127.0.0.1:1: connect: connection refused", "upstream: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"50% off", "50%25 off"},
		{"naïve\n", "na%C3%AFve%0A"},
	} {
		if got := percentEncode(tc.in); got != tc.want {
			t.Errorf("percentEncode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

package faultyserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The fake server's gRPC face (see grpcwire.go). A gRPC call reaches
// Server.ServeHTTP like any request on the port — net/http speaks HTTP/2
// for both h2c and gRPC — and is handed to a grpc.Server through its
// ServeHTTP, so that one listener, one connection accounting and one
// connection-scope reset (connContext) serve every protocol; grpc-go's own
// HTTP/2 server would need the port to itself or a connection sniffer in
// front. The call then goes through the same handle as an HTTP request:
// the same plan, queue, workers, counters and faults, answered as gRPC.

// isGRPC reports whether r is a gRPC call: HTTP/2 with a content type of
// application/grpc, application/grpc+<codec> or application/grpc;<params>
// (not gRPC-Web, application/grpc-web, which is another protocol).
func isGRPC(r *http.Request) bool {
	if r.ProtoMajor != 2 {
		return false
	}
	rest, ok := strings.CutPrefix(r.Header.Get("Content-Type"), "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// grpcBackend is the service GRPCMethod belongs to.
type grpcBackend interface {
	grpcCall(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.BytesValue, error)
}

// backendServiceDesc describes GRPCService by hand, as generated code
// would, with the well-known wrapper types as its messages.
var backendServiceDesc = grpc.ServiceDesc{
	ServiceName: GRPCService,
	HandlerType: (*grpcBackend)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: GRPCMethodName, Handler: backendCallHandler}},
	Metadata:    "lbchaos/v1/backend.proto",
}

func backendCallHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	b := srv.(grpcBackend)
	if interceptor == nil {
		return b.grpcCall(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: GRPCMethod}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return b.grpcCall(ctx, req.(*wrapperspb.StringValue))
	})
}

// newGRPCServer returns the grpc.Server of s's gRPC face; every call's
// answer carries a per-call ORCA load report (orca.CallMetricsServerOption).
// grpc-go runs each call on a goroutine of its own and recovers no panic:
// with Config.OnPanic, recoverGRPC does.
func newGRPCServer(s *Server) *grpc.Server {
	opts := []grpc.ServerOption{orca.CallMetricsServerOption(nil), grpc.UnknownServiceHandler(s.grpcUnknown)}
	if s.cfg.OnPanic != nil {
		opts = append(opts, grpc.ChainUnaryInterceptor(s.recoverGRPC))
	}
	g := grpc.NewServer(opts...)
	g.RegisterService(&backendServiceDesc, s)
	return g
}

// grpcUnknown answers a call of any other method UNIMPLEMENTED, naming
// the one there is, with the instance id; it is not counted in Stats.
func (s *Server) grpcUnknown(_ any, ss grpc.ServerStream) error {
	_ = ss.SetHeader(metadata.MD{GRPCInstanceKey: {s.ident().str}})
	method, _ := grpc.MethodFromServerStream(ss)
	return status.Errorf(codes.Unimplemented, "faultyserver: no method %s; instance %s serves %s", method, s.ident().str, GRPCMethod)
}

// Release stops the Server's gRPC face for good. Call it after Close,
// once no connection serves the Server any more: whoever serves a
// Server on an http.Server of their own (as the in-process fleet does)
// releases it after closing that.
func (s *Server) Release() { s.grpc.Stop() }

// serveGRPC serves one gRPC call (r) through the gRPC server. A call the
// gRPC server answers with a status alone (a failure: an injected fault,
// a full queue, an unknown method) goes out Trailers-Only (see
// trailersOnly); a served call as the gRPC server writes it: headers,
// message, trailers.
func (s *Server) serveGRPC(w http.ResponseWriter, r *http.Request) {
	x := &grpcExchange{w: w}
	r = r.WithContext(context.WithValue(r.Context(), grpcExchangeKey{}, x))
	s.grpc.ServeHTTP(x, r)
	if scope := x.reset.Load(); scope != 0 {
		// Nothing of the call was written: reset its stream (or
		// connection) as an HTTP/2 request's.
		resetRequest(w, r, scope == resetWholeConn)
		return
	}
	if h := w.Header(); !x.started && len(h[hdrGRPCStatus]) > 0 {
		trailersOnly(h)
		w.WriteHeader(http.StatusOK)
	}
}

// trailersOnly turns the answer grpc-go's handler transport left in h —
// header fields, trailers declared ("Trailer") and set (grpc-status,
// grpc-message, "Trailer:"-prefixed metadata) — into header fields alone,
// so that net/http's HTTP/2 server, the handler returning without a body,
// sends them as one HEADERS frame ending the stream: the Trailers-Only
// answer (gRPC over HTTP/2, "Responses") that grpc-go's own HTTP/2
// server gives a call failed before any message. A client reads its
// metadata as trailer metadata. grpc-go's client retries only such an
// answer (clientStream's shouldRetry: no retry once response headers
// came); its handler transport (grpc.Server.ServeHTTP) always flushes
// headers before the status, which is why serveGRPC holds them back.
func trailersOnly(h http.Header) {
	delete(h, "Trailer")
	for k, vs := range h {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			delete(h, k)
			ck := http.CanonicalHeaderKey(name)
			h[ck] = append(h[ck], vs...)
		}
	}
	// Present but empty: no content-length: 0 and no date of net/http's,
	// which a client would read as trailer metadata.
	h["Content-Length"] = nil
	h["Date"] = nil
}

// grpcExchange is the ResponseWriter a gRPC call is served through. A
// handler that resets the call marks it here; from then on every write is
// dropped, and serveGRPC resets the stream once the gRPC server is done.
// Until a message or WriteHeader starts the answer, a Flush is held back,
// so that an answer that turns out to be a status alone can still go out
// Trailers-Only. The gRPC server writes only from the ServeHTTP goroutine.
type grpcExchange struct {
	w       http.ResponseWriter
	reset   atomic.Int32 // 0, resetStreamOnly or resetWholeConn
	started bool         // the headers went to w; only on the ServeHTTP goroutine
}

const (
	resetStreamOnly = 1
	resetWholeConn  = 2
)

type grpcExchangeKey struct{}

var errCallReset = errors.New("faultyserver: gRPC call reset")

func (x *grpcExchange) Header() http.Header { return x.w.Header() }

func (x *grpcExchange) Write(p []byte) (int, error) {
	if x.reset.Load() != 0 {
		return 0, errCallReset
	}
	x.started = true
	return x.w.Write(p)
}

func (x *grpcExchange) WriteHeader(code int) {
	if x.reset.Load() == 0 {
		x.started = true
		x.w.WriteHeader(code)
	}
}

// Flush flushes what was written; before the answer started, nothing.
func (x *grpcExchange) Flush() {
	if f, ok := x.w.(http.Flusher); ok && x.started && x.reset.Load() == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (x *grpcExchange) Unwrap() http.ResponseWriter { return x.w }

// grpcCall serves one call of GRPCMethod.
func (s *Server) grpcCall(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.BytesValue, error) {
	if s.handlerHook != nil {
		s.handlerHook(GRPCMethod)
	}
	a := &grpcAnswer{ctx: ctx, id: s.ident().str, window: s.window}
	handle(ctx, s, a)
	if a.resp == nil && a.err == nil { // the client went away: no answer
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return a.resp, a.err
}

// grpcAnswer answers a gRPC call: the instance and load in the header
// metadata and the load report in ORCA, a BytesValue or a status (which
// serveGRPC sends Trailers-Only, that metadata with it).
type grpcAnswer struct {
	ctx    context.Context
	id     string
	window *loadWindow
	resp   *wrapperspb.BytesValue
	err    error
}

// report sets the header metadata and the call's ORCA load report.
func (a *grpcAnswer) report(load int) {
	_ = grpc.SetHeader(a.ctx, metadata.MD{GRPCInstanceKey: {a.id}, GRPCLoadKey: {strconv.Itoa(load)}})
	if rec := orca.CallMetricsRecorderFromContext(a.ctx); rec != nil {
		rep := a.window.report(load)
		rec.SetApplicationUtilization(rep.Utilization)
		rec.SetQPS(rep.RPS)
		rec.SetEPS(rep.EPS)
		rec.SetNamedMetric(ORCAInFlightMetric, float64(rep.Load))
	}
}

func (a *grpcAnswer) ok(load int) {
	a.report(load)
	a.resp = &wrapperspb.BytesValue{Value: okBody}
}

func (a *grpcAnswer) fail(load, _ int, code codes.Code, msg string) {
	a.report(load)
	if code == codes.OK {
		code = codes.Unavailable
	}
	a.err = status.Error(code, msg)
}

func (a *grpcAnswer) reset(wholeConn bool) {
	a.err = status.Error(codes.Unavailable, "reset") // sent only if the call cannot be reset
	x, ok := a.ctx.Value(grpcExchangeKey{}).(*grpcExchange)
	if !ok {
		return
	}
	if wholeConn {
		x.reset.Store(resetWholeConn)
	} else {
		x.reset.Store(resetStreamOnly)
	}
}

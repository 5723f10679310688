package faultyserver

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Panic is a panic in a server's code, recovered and reported through
// Config.OnPanic.
type Panic struct {
	// Where names the code that panicked: "handler of GET /work", or the
	// name given to Go.
	Where string
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
	// Fatal is true for a goroutine started with Go: its work is lost and
	// the instance cannot be trusted to serve on. A handler's panic is
	// not: only its request was lost.
	Fatal bool
	// Effect says what became of the server, in a few words: "the
	// request was aborted".
	Effect string
}

func (p Panic) String() string { return fmt.Sprintf("panic in %s: %v", p.Where, p.Value) }

// shared holds the OnPanic of every server of the process that has one,
// for panics of code they all share (the precise sleeper).
var shared struct {
	sync.Mutex
	reporters map[*Server]func(Panic)
}

// shareReports registers s's OnPanic, if any, until unshareReports.
func shareReports(s *Server) {
	if s.cfg.OnPanic == nil {
		return
	}
	shared.Lock()
	defer shared.Unlock()
	if shared.reporters == nil {
		shared.reporters = map[*Server]func(Panic){}
	}
	shared.reporters[s] = s.cfg.OnPanic
}

func unshareReports(s *Server) {
	shared.Lock()
	defer shared.Unlock()
	delete(shared.reporters, s)
}

// reportShared tells every registered server of x; with none, x is not
// recovered: it ends the process, as it would have.
func reportShared(x Panic) {
	shared.Lock()
	reporters := make([]func(Panic), 0, len(shared.reporters))
	for _, r := range shared.reporters {
		reporters = append(reporters, r)
	}
	shared.Unlock()
	if len(reporters) == 0 {
		panic(x.Value)
	}
	for _, r := range reporters {
		r(x)
	}
}

// recoverHandler, deferred by ServeHTTP when Config.OnPanic is set, reports
// a handler's panic and aborts the request with http.ErrAbortHandler: the
// client sees its connection (HTTP/1.1) or stream (HTTP/2) end without an
// answer, as net/http would do with the original panic, but without its
// log line. http.ErrAbortHandler itself is how a reset fault ends a
// request (resetRequest) and passes through unreported.
func (s *Server) recoverHandler(r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.cfg.OnPanic(Panic{Where: "handler of " + r.Method + " " + r.URL.Path, Value: v, Stack: debug.Stack(), Effect: "the request was aborted"})
	panic(http.ErrAbortHandler)
}

// recoverGRPC is the unary interceptor that reports a call handler's
// panic, which would otherwise end the process, and fails the call with
// INTERNAL.
func (s *Server) recoverGRPC(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.cfg.OnPanic(Panic{Where: "gRPC handler of " + info.FullMethod, Value: v, Stack: debug.Stack(), Effect: "the call failed with INTERNAL"})
			resp, err = nil, status.Errorf(codes.Internal, "faultyserver: instance %s: the handler panicked", s.ident().str)
		}
	}()
	return handler(ctx, req)
}

// Go runs fn on a new goroutine that belongs to the instance: a panic in
// fn is recovered and reported through Config.OnPanic as fatal (the
// instance should be taken as dead, not the process), named where. When
// OnPanic is nil the panic is not recovered and ends the process, as any
// goroutine's panic does.
func (s *Server) Go(where string, fn func()) {
	report := s.cfg.OnPanic
	if report == nil {
		go fn()
		return
	}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				report(Panic{Where: where, Value: v, Stack: debug.Stack(), Fatal: true, Effect: "the instance stopped serving"})
			}
		}()
		fn()
	}()
}

package faultyserver

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// ShutdownGrace bounds how long Serve waits for requests in progress as it
// finishes (ShutdownFinish, and ShutdownDrain after its delay). Requests
// still running then are answered 503 and the remaining connections closed.
const ShutdownGrace = 5 * time.Second

// Serve runs one instance as its own HTTP server on addr (host:port) until
// ctx is done, then shuts down gracefully; see ServeListener. logf, when not
// nil, receives one line at start and one at shutdown.
func Serve(ctx context.Context, cfg Config, addr string, logf func(format string, args ...any)) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("faultyserver: %w", err)
	}
	return serve(ctx, s, ln, logf)
}

// ServeListener is Serve on an existing listener, which it closes. On
// shutdown it carries out cfg.Shutdown: by default (ShutdownFinish) it
// stops accepting, ends hanging requests with 503, lets other requests
// finish for up to ShutdownGrace, then closes the Server and every
// remaining connection; ShutdownAbrupt closes everything at once and
// ShutdownDrain serves on for its delay first (see Shutdown). From the
// shutdown's start the health check answers 503. It returns nil after a
// shutdown caused by ctx.
func ServeListener(ctx context.Context, cfg Config, ln net.Listener, logf func(format string, args ...any)) error {
	s, err := New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	return serve(ctx, s, ln, logf)
}

// ServeSidecar runs a Sidecar for cfg as its own HTTP server on addr
// (host:port) until ctx is done, then shuts down as ServeListener does,
// in cfg.Shutdown's mode: when finishing, hanging requests end with 503,
// forwarded requests get up to ShutdownGrace to finish, then the rest are
// cancelled.
func ServeSidecar(ctx context.Context, cfg SidecarConfig, addr string, logf func(format string, args ...any)) error {
	s, err := NewSidecar(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return fmt.Errorf("faultyserver: %w", err)
	}
	return serve(ctx, s, ln, logf)
}

// instanceHandler is what serve runs: a Server or a Sidecar.
type instanceHandler interface {
	http.Handler
	instanceID() int
	describe() string // for the start line, e.g. "workers 8, service fixed 10ms"
	controlToken() string
	shutdownConfig() Shutdown
	beginStop()
	beginDrain()
	Close()
	Listener(net.Listener) net.Listener // carries out connection faults (connfault.go)
}

func (s *Server) shutdownConfig() Shutdown  { return s.cfg.Shutdown }
func (s *Sidecar) shutdownConfig() Shutdown { return s.cfg.Shutdown }

func (s *Server) describe() string {
	return fmt.Sprintf("workers %d, service %s", s.cfg.Workers, s.cfg.Service)
}
func (s *Sidecar) describe() string {
	if s.grpcUp != s.upstream {
		return "sidecar of " + s.upstream.String() + ", gRPC to " + s.grpcUp.String()
	}
	return "sidecar of " + s.upstream.String()
}

func serve(ctx context.Context, s instanceHandler, ln net.Listener, logf func(format string, args ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(logWriter(logf), "", 0),
		Protocols:         serveProtocols(),
		ConnContext:       connContext,
	}
	if g, ok := s.(interface{ Release() }); ok {
		defer g.Release() // once every call has ended
	}
	id := s.instanceID()
	control := "control API needs the token"
	if s.controlToken() == "" {
		control = "control API open: no token"
	}
	logf("faultyserver: instance %d listening on %s (%s; %s)", id, ln.Addr(), s.describe(), control)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.Listener(ln)) }()

	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("faultyserver: instance %d: %w", id, err)
	case <-ctx.Done():
	}

	sd := s.shutdownConfig()
	logf("faultyserver: instance %d shutting down (%s)", id, sd)
	s.beginStop()
	var err error
	switch sd.mode() {
	case ShutdownAbrupt:
		// No answers: the listener and every connection go at once;
		// the handlers still running write to closed connections.
		err = srv.Close()
		s.Close()
	case ShutdownDrain:
		srv.SetKeepAlivesEnabled(false)
		t := time.NewTimer(sd.Delay)
		select {
		case <-t.C:
		case serr := <-errc:
			t.Stop()
			s.Close()
			return fmt.Errorf("faultyserver: instance %d: during the shutdown's drain: %w", id, serr)
		}
		logf("faultyserver: instance %d: drain over, finishing", id)
		err = finish(srv, s)
	default:
		err = finish(srv, s)
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("faultyserver: instance %d: shutdown: %w", id, err)
	}
	return nil
}

// finish is ShutdownFinish: stop accepting, end hanging requests with
// 503, let the others finish for up to ShutdownGrace, then close s and
// every connection left.
func finish(srv *http.Server, s instanceHandler) error {
	s.beginDrain()
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	err := srv.Shutdown(ctx)
	cancel()
	s.Close()
	if err != nil {
		err = srv.Close()
	}
	return err
}

// serveProtocols are what an instance speaks on its one port: HTTP/1.1,
// and HTTP/2 over cleartext (h2c) with prior knowledge, which a client
// starts with the HTTP/2 preface rather than an Upgrade. Every request is
// served by the same handler whatever its protocol, so the service model,
// faults and headers are the same; where reset closes the connection on
// HTTP/1.1, HTTP/2 resets the request's stream alone, unless the reset's
// scope is the connection.
func serveProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// logWriter adapts logf to the io.Writer of a log.Logger.
type logWriter func(format string, args ...any)

func (l logWriter) Write(p []byte) (int, error) {
	l("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

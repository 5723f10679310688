package metrics

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// Path is where a Server answers with the metrics.
const Path = "/metrics"

// Server serves an exporter's metrics over HTTP at Path.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when Serve returned
}

// Listen binds addr (host:port; port 0 picks a free one) at once, so that
// an address that cannot be bound fails before anything runs, and serves
// e's metrics on it until Close.
func Listen(addr string, e *Exporter) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, e.Handler())
	s := &Server{
		ln:   ln,
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ends with http.ErrServerClosed at Close
	}()
	return s, nil
}

// Addr is the address the server listens on, its port resolved.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is where the metrics are scraped.
func (s *Server) URL() string { return "http://" + s.Addr() + Path }

// Close stops listening, closes every connection (a scrape under way
// included) and returns once the server is gone. It is safe to call more
// than once.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Command exampleservice is a small HTTP service to put under lbchaos as
// "your own service": it has no lbchaos code in it. It serves every path
// with a fixed service time on a bounded number of workers, so requests
// queue as they do on a real service, answers its health check at
// /healthz, and counts what it received at /stats (requests and body bytes
// per method and path), so tests can compare what was sent with what
// arrived.
//
//	exampleservice [--port 8080] [--workers 8] [--service 10ms]
//
// The port may also come from the PORT variable (the flag wins). It stops
// on SIGINT or SIGTERM after letting requests in progress finish.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", envInt("PORT", 8080), "TCP port to listen on (default: $PORT, else 8080)")
	workers := flag.Int("workers", 8, "requests served at once; the rest wait in line")
	service := flag.Duration("service", 10*time.Millisecond, "time each request takes on a worker")
	flag.Parse()
	if *workers < 1 {
		log.Fatalf("exampleservice: --workers: want at least 1, got %d", *workers)
	}
	if *service < 0 {
		log.Fatalf("exampleservice: --service: want a duration >= 0, got %v", *service)
	}
	s := newService(*workers, *service)
	srv := &http.Server{Addr: fmt.Sprintf(":%d", *port), Handler: s, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("exampleservice: listening on :%d, %d workers, %v per request", *port, *workers, *service)
	select {
	case err := <-errc:
		log.Fatalf("exampleservice: %v", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("exampleservice: shutdown: %v", err)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// service serves requests on a fixed number of workers.
type service struct {
	workers chan struct{} // a token per worker
	delay   time.Duration

	mu     sync.Mutex
	counts map[string]*count // by "METHOD path"
}

// count is what arrived for one method and path.
type count struct {
	Requests  int64 `json:"requests"`
	BodyBytes int64 `json:"body_bytes"`
}

func newService(workers int, delay time.Duration) *service {
	return &service{workers: make(chan struct{}, workers), delay: delay, counts: map[string]*count{}}
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.WriteHeader(http.StatusOK)
		return
	case "/stats":
		s.serveStats(w)
		return
	}
	n, _ := io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	key := r.Method + " " + r.URL.Path
	c := s.counts[key]
	if c == nil {
		c = &count{}
		s.counts[key] = c
	}
	c.Requests++
	c.BodyBytes += n
	s.mu.Unlock()

	// Wait in line for a worker; a client that gives up leaves the line.
	select {
	case s.workers <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-s.workers }()
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "ok %s %s\n", r.Method, r.URL.Path)
}

func (s *service) serveStats(w http.ResponseWriter) {
	s.mu.Lock()
	keys := make([]string, 0, len(s.counts))
	for k := range s.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]count, len(keys))
	for _, k := range keys {
		out[k] = *s.counts[k]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}

package faultyserver

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServeListenerShutsDownOnCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var logs strings.Builder
	logc := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- ServeListener(ctx, Config{ID: 1, Workers: 2, Service: Fixed(0)}, ln, func(format string, args ...any) {
			logc <- format
		})
	}()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	c := &Client{BaseURL: "http://" + ln.Addr().String(), HTTP: hc}
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	if err := c.SetFault(ctx, Hang{}); err != nil {
		t.Fatalf("SetFault: %v", err)
	}
	hung := make(chan result, 1)
	go func() { hung <- do(context.Background(), hc, "GET", c.BaseURL+"/", nil) }()
	time.Sleep(20 * time.Millisecond) // let the request arrive and hang

	begin := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeListener: %v, want nil after cancel", err)
		}
	case <-time.After(ShutdownGrace + 2*time.Second):
		t.Fatal("ServeListener did not return after cancel")
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("shutdown with a hanging request took %v, want it released at once", took)
	}
	r := <-hung
	if r.err == nil && r.status != http.StatusServiceUnavailable {
		t.Errorf("hanging request at shutdown: %d, want 503 or a closed connection", r.status)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Errorf("listener still accepting after shutdown")
	}
	close(logc)
	for l := range logc {
		logs.WriteString(l + "\n")
	}
	if !strings.Contains(logs.String(), "listening") || !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("logs %q, want a start and a shutdown line", logs.String())
	}
}

func TestServeErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		addr string
		want string
	}{
		{"bad config", Config{Workers: -1, Service: Fixed(0)}, "127.0.0.1:0", "workers:"},
		{"bad address", Config{Service: Fixed(0)}, "127.0.0.1:notaport", "faultyserver:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Serve(t.Context(), tt.cfg, tt.addr, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Serve: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestServeRunsUntilCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Config{Service: Fixed(0)}, "127.0.0.1:0", nil) }()
	select {
	case err := <-done:
		t.Fatalf("Serve returned before cancel: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v, want nil", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func BenchmarkServeFixedZero(b *testing.B) {
	s, err := New(Config{Workers: 8, Service: Fixed(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

func BenchmarkServeFixedZeroParallel(b *testing.B) {
	s, err := New(Config{Workers: 8, Service: Fixed(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		for pb.Next() {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
		}
	})
}

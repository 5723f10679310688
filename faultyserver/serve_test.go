package faultyserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
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

// TestServeSpeaksH2C: one port serves HTTP/1.1 and HTTP/2 over cleartext
// (prior knowledge) with the same handler: the instance header, a fail
// fault's status; reset resets the HTTP/2 request's stream, and the
// connection lives on for the next request.
func TestServeSpeaksH2C(t *testing.T) {
	s, err := New(Config{ID: 3, Workers: 4, Service: Fixed(0)})
	if err != nil {
		t.Fatal(err)
	}
	base, h1 := serveForTest(t, s)
	ctx := t.Context()
	c := &Client{BaseURL: base, HTTP: &http.Client{Transport: h1}}
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	h2 := h2cTransport(t)

	// get sends GET / over tr and reports the answer and whether it went
	// on a connection used before.
	get := func(tr *http.Transport) (resp *http.Response, reused bool, err error) {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, base+"/", nil)
		resp, err = tr.RoundTrip(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, reused, err
	}
	for _, tc := range []struct {
		name  string
		tr    *http.Transport
		major int
	}{{"HTTP/1.1", h1, 1}, {"h2c", h2, 2}} {
		resp, _, err := get(tc.tr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.ProtoMajor != tc.major || resp.StatusCode != http.StatusOK || resp.Header.Get(InstanceHeader) != "3" {
			t.Errorf("%s: %s %d, instance %q; want HTTP/%d 200 from instance 3", tc.name, resp.Proto, resp.StatusCode, resp.Header.Get(InstanceHeader), tc.major)
		}
	}

	if err := c.SetFault(ctx, Fail{Status: 502}); err != nil {
		t.Fatal(err)
	}
	if resp, _, err := get(h2); err != nil || resp.StatusCode != http.StatusBadGateway || resp.Header.Get(InstanceHeader) != "3" {
		t.Errorf("h2c under fail: %v, %v; want 502 from instance 3", resp, err)
	}

	if err := c.SetFault(ctx, Reset{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(h2); err == nil || !strings.Contains(err.Error(), "stream error") {
		t.Errorf("h2c under reset: %v, want the stream reset", err)
	}
	if err := c.ClearFault(ctx); err != nil {
		t.Fatal(err)
	}
	resp, reused, err := get(h2)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("h2c after reset: %v, %v", resp, err)
	}
	if !reused {
		t.Error("h2c after a reset stream: a new connection; want the reset to leave the connection open")
	}
}

// TestSidecarSpeaksH2C: the sidecar's port takes h2c too, and forwards
// the request, body included, to its upstream over HTTP/1.1.
func TestSidecarSpeaksH2C(t *testing.T) {
	var upProto atomic.Value
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		upProto.Store(r.Proto)
		echo(w, r)
	})
	s, err := NewSidecar(SidecarConfig{ID: 5, Upstream: up.ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serveForTest(t, s)
	ctx := t.Context()
	tr := h2cTransport(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/items?x=1", strings.NewReader("payload"))
	req.Header.Set("X-Test", "t")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusCreated || resp.Header.Get(InstanceHeader) != "5" {
		t.Errorf("%s %d, instance %q; want HTTP/2 201 from instance 5", resp.Proto, resp.StatusCode, resp.Header.Get(InstanceHeader))
	}
	if want := "POST /items ?x=1 t payload"; string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if got, _ := upProto.Load().(string); got != "HTTP/1.1" {
		t.Errorf("upstream got %q, want HTTP/1.1", got)
	}
}

// TestResetScopeOnH2C: on one HTTP/2 connection, a request in progress
// survives a stream reset of another request, and fails with it when the
// reset's scope is the connection.
func TestResetScopeOnH2C(t *testing.T) {
	for _, tc := range []struct {
		scope       string
		slowSurvive bool
	}{{ResetStream, true}, {ResetConnection, false}} {
		t.Run(tc.scope, func(t *testing.T) {
			s, err := New(Config{ID: 1, Workers: 4, Service: Fixed(0)})
			if err != nil {
				t.Fatal(err)
			}
			base, h1 := serveForTest(t, s)
			ctx := t.Context()
			c := &Client{BaseURL: base, HTTP: &http.Client{Transport: h1}}
			h2 := h2cTransport(t)
			h2.MaxConnsPerHost = 1 // one connection for every request
			get := func() (int, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
				resp, err := h2.RoundTrip(req)
				if err != nil {
					return 0, err
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					return 0, err
				}
				return resp.StatusCode, nil
			}
			if _, err := get(); err != nil { // open the connection
				t.Fatal(err)
			}
			if err := c.SetFault(ctx, Slow{Latency: Duration(400 * time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
			slow := make(chan error, 1)
			go func() {
				status, err := get()
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("status %d", status)
				}
				slow <- err
			}()
			waitFor(t, func() bool { st := c.mustStats(t); return st.InFlight == 1 })
			if err := c.SetFault(ctx, Reset{Scope: tc.scope}); err != nil {
				t.Fatal(err)
			}
			if _, err := get(); err == nil {
				t.Error("a request under reset got an answer")
			}
			err = <-slow
			if tc.slowSurvive && err != nil {
				t.Errorf("the request in progress on the same connection failed with a stream reset: %v", err)
			}
			if !tc.slowSurvive && err == nil {
				t.Error("the request in progress on the same connection survived a connection reset")
			}
		})
	}
}

// mustStats returns the instance's stats or fails the test.
func (c *Client) mustStats(t *testing.T) Stats {
	t.Helper()
	st, err := c.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}

// serveForTest serves h (a Server or a Sidecar) as serve does, on a
// loopback port, until the test ends, and returns its base URL and an
// HTTP/1.1 transport.
func serveForTest(t testing.TB, h instanceHandler) (string, *http.Transport) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, h, ln, nil) }()
	h1 := &http.Transport{}
	t.Cleanup(func() {
		h1.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), h1
}

// h2cTransport is a client transport of HTTP/2 over cleartext with prior
// knowledge, closed when the test ends.
func h2cTransport(t testing.TB) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

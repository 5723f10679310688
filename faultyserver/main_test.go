package faultyserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	defaultHTTPClient.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// instance is a Server behind a real loopback HTTP server.
type instance struct {
	s      *Server
	ts     *httptest.Server
	client *http.Client
}

// start runs a Server for cfg until the test ends.
func start(t testing.TB, cfg Config) *instance {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close() // release queued and hanging requests, so ts.Close does not wait
		ts.Close()
	})
	return &instance{s: s, ts: ts, client: ts.Client()}
}

type result struct {
	status int
	header http.Header
	body   string
	err    error
	took   time.Duration
}

// get sends GET path and reads the whole answer.
func (in *instance) get(ctx context.Context, path string) result {
	return do(ctx, in.client, http.MethodGet, in.ts.URL+path, nil)
}

func do(ctx context.Context, c *http.Client, method, url string, body io.Reader) result {
	begin := time.Now()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return result{err: err}
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{err: err, took: time.Since(begin)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err, took: time.Since(begin)}
}

// waitStats polls s until cond holds, failing the test after 5 s.
func waitStats(t testing.TB, s *Server, what string, cond func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := s.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stats %+v", what, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitUntil polls cond until it holds, failing the test after 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustSetFault(t testing.TB, s *Server, f Fault) {
	t.Helper()
	if err := s.SetFault(f); err != nil {
		t.Fatalf("SetFault(%#v): %v", f, err)
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

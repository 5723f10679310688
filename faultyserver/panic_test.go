package faultyserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// panics collects what a server's OnPanic is told.
type panics struct {
	mu  sync.Mutex
	got []Panic
	ch  chan struct{}
}

func newPanics() *panics { return &panics{ch: make(chan struct{}, 16)} }

func (p *panics) report(x Panic) {
	p.mu.Lock()
	p.got = append(p.got, x)
	p.mu.Unlock()
	p.ch <- struct{}{}
}

func (p *panics) all() []Panic {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Panic(nil), p.got...)
}

// TestHandlerPanic: a handler's panic is reported (not fatal, with the
// request and the stack), its request ends without an answer, and the
// server answers the next request. A reset fault's abort is not a panic.
func TestHandlerPanic(t *testing.T) {
	p := newPanics()
	s, err := New(Config{ID: 4, Service: Fixed(0), OnPanic: p.report})
	if err != nil {
		t.Fatal(err)
	}
	SetHandlerHook(s, func(path string) {
		if path == "/boom" {
			panic("boom in a handler")
		}
	})
	ts := httptest.NewServer(s)
	defer ts.Close()

	if resp, err := http.Get(ts.URL + "/boom"); err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered %s", resp.Status)
	}
	resp, err := http.Get(ts.URL + "/ok")
	if err != nil {
		t.Fatalf("the server did not go on after a handler's panic: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the panic: %s", resp.Status)
	}
	got := p.all()
	if len(got) != 1 {
		t.Fatalf("reported %d panics, want 1: %v", len(got), got)
	}
	if g := got[0]; g.Fatal || g.Value != "boom in a handler" || g.Where != "handler of GET /boom" || !strings.Contains(string(g.Stack), "panic_test.go") {
		t.Errorf("reported %v (fatal %v), stack:\n%s", g, g.Fatal, g.Stack)
	}

	if err := s.SetFault(Reset{}); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(ts.URL + "/reset"); err == nil {
		resp.Body.Close()
		t.Fatalf("a reset request answered %s", resp.Status)
	}
	if n := len(p.all()); n != 1 {
		t.Errorf("a reset fault's abort was reported as a panic (%d reported)", n)
	}
}

// TestGoPanic: a panic in a goroutine started with Go is recovered and
// reported as fatal, named; the process goes on.
func TestGoPanic(t *testing.T) {
	p := newPanics()
	s, err := New(Config{ID: 1, Service: Fixed(0), OnPanic: p.report})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	s.Go("a worker", func() { close(ran) })
	<-ran
	s.Go("the load window", func() { var m map[string]int; m["x"] = 1 })
	select {
	case <-p.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no panic reported")
	}
	got := p.all()
	if len(got) != 1 || !got[0].Fatal || got[0].Where != "the load window" || !strings.Contains(got[0].String(), "assignment to entry in nil map") {
		t.Errorf("reported %v", got)
	}
}

// TestSleeperPanic: a panic in the precise sleeper every server shares is
// recovered: the sleeper waiting on it wakes, every server that takes
// reports is told (not fatal), and later sleeps keep their time on the
// runtime's timers.
func TestSleeperPanic(t *testing.T) {
	p := newPanics()
	s, err := New(Config{ID: 2, Service: Fixed(0), OnPanic: p.report})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var once sync.Once
	sleeper.mu.Lock()
	sleeperHook = func() { once.Do(func() { panic("heap corrupted") }) }
	sleeper.mu.Unlock()
	t.Cleanup(func() {
		sleeper.mu.Lock()
		sleeperHook, sleeper.broken = nil, false
		sleeper.mu.Unlock()
	})

	done := make(chan error, 1)
	go func() { done <- s.sleep(t.Context(), 5*time.Millisecond) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a sleep did not end after the sleeper panicked")
	}
	select {
	case <-p.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no panic reported")
	}
	got := p.all()
	if len(got) != 1 || got[0].Fatal || got[0].Value != "heap corrupted" || !strings.Contains(got[0].Where, "precise sleeper") ||
		!strings.Contains(got[0].Effect, "runtime's timers") {
		t.Errorf("reported %+v", got)
	}
	began := time.Now()
	if err := s.sleep(t.Context(), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 5*time.Millisecond {
		t.Errorf("a sleep of 5 ms after the panic took %v", d)
	}
}

// TestGRPCHandlerPanic: a gRPC call's handler panics on a goroutine of
// grpc-go's, which recovers nothing: the panic is reported, the call fails
// with INTERNAL, and the next call is served.
func TestGRPCHandlerPanic(t *testing.T) {
	p := newPanics()
	s, _, cc := startGRPC(t, Config{ID: 3, Service: Fixed(0), OnPanic: p.report})
	var once sync.Once
	SetHandlerHook(s, func(path string) {
		if path == GRPCMethod {
			once.Do(func() { panic("boom in a call") })
		}
	})
	if r := call(t.Context(), cc); r.code() != codes.Internal {
		t.Fatalf("a panicking call: %v, want INTERNAL", r.err)
	}
	if r := call(t.Context(), cc); r.err != nil {
		t.Fatalf("the call after the panic: %v", r.err)
	}
	got := p.all()
	if len(got) != 1 || got[0].Fatal || got[0].Value != "boom in a call" || got[0].Where != "gRPC handler of "+GRPCMethod ||
		got[0].Effect != "the call failed with INTERNAL" {
		t.Errorf("reported %+v", got)
	}
}

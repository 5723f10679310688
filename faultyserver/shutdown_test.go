package faultyserver

import (
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestShutdownValidate(t *testing.T) {
	tests := []struct {
		name string
		sd   Shutdown
		err  string // "" = valid
	}{
		{"zero is finish", Shutdown{}, ""},
		{"finish", Shutdown{Mode: ShutdownFinish}, ""},
		{"abrupt", Shutdown{Mode: ShutdownAbrupt}, ""},
		{"drain without delay", Shutdown{Mode: ShutdownDrain}, ""},
		{"drain", Shutdown{Mode: ShutdownDrain, Delay: 5 * time.Second}, ""},
		{"drain at the limit", Shutdown{Mode: ShutdownDrain, Delay: MaxShutdownDelay}, ""},
		{"unknown mode", Shutdown{Mode: "graceful"}, `mode: unknown shutdown mode "graceful" (want one of finish, abrupt, drain)`},
		{"delay with finish", Shutdown{Mode: ShutdownFinish, Delay: time.Second}, "delay: applies to the drain mode only (finish has no delay), got 1s"},
		{"delay with the default", Shutdown{Delay: time.Second}, "delay: applies to the drain mode only (finish has no delay)"},
		{"delay with abrupt", Shutdown{Mode: ShutdownAbrupt, Delay: time.Second}, "delay: applies to the drain mode only (abrupt has no delay)"},
		{"negative delay", Shutdown{Mode: ShutdownDrain, Delay: -time.Second}, "delay: must be >= 0, got -1s"},
		{"delay too long", Shutdown{Mode: ShutdownDrain, Delay: 11 * time.Minute}, "delay: must be at most 10m0s, got 11m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sd.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Fatalf("Validate: %v, want an error starting %q", err, tt.err)
			}
			cfg := Config{Service: Fixed(0), Shutdown: tt.sd}
			if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "shutdown: "+tt.err) {
				t.Errorf("Config.Validate: %v, want an error starting %q", err, "shutdown: "+tt.err)
			}
			sc := SidecarConfig{Upstream: "http://127.0.0.1:1", Shutdown: tt.sd}
			if err := sc.Validate(); err == nil || !strings.HasPrefix(err.Error(), "shutdown: "+tt.err) {
				t.Errorf("SidecarConfig.Validate: %v, want an error starting %q", err, "shutdown: "+tt.err)
			}
		})
	}
}

func TestShutdownFlags(t *testing.T) {
	tests := []struct {
		args []string
		want Shutdown
		err  string
	}{
		{args: nil, want: Shutdown{}},
		{args: []string{"--shutdown", "abrupt"}, want: Shutdown{Mode: ShutdownAbrupt}},
		{args: []string{"--shutdown", "drain", "--shutdown-delay", "5s"}, want: Shutdown{Mode: ShutdownDrain, Delay: 5 * time.Second}},
		{args: []string{"--shutdown", "nice"}, err: `--shutdown: unknown shutdown mode "nice" (want one of finish, abrupt, drain)`},
		{args: []string{"--shutdown-delay", "5s"}, err: "--shutdown-delay: applies to the drain mode only"},
		{args: []string{"--shutdown", "drain", "--shutdown-delay", "1h"}, err: "--shutdown-delay: must be at most 10m0s"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for _, sidecar := range []bool{false, true} {
				f := DefaultFlags
				fs := flag.NewFlagSet("serve", flag.ContinueOnError)
				f.Bind(fs)
				args := tt.args
				if sidecar {
					args = append([]string{"--upstream", "http://127.0.0.1:8080"}, args...)
				}
				if err := fs.Parse(args); err != nil {
					t.Fatal(err)
				}
				var got Shutdown
				var err error
				if sidecar {
					var cfg SidecarConfig
					cfg, err = f.SidecarConfig()
					got = cfg.Shutdown
				} else {
					var cfg Config
					cfg, err = f.Config()
					got = cfg.Shutdown
				}
				if tt.err != "" {
					if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
						t.Errorf("sidecar %v: err = %v, want one starting %q", sidecar, err, tt.err)
					}
					continue
				}
				if err != nil || got != tt.want {
					t.Errorf("sidecar %v: %+v, %v; want %+v", sidecar, got, err, tt.want)
				}
			}
		})
	}
}

// served is an instance run by serve on a loopback port.
type served struct {
	base   string
	addr   string
	cancel context.CancelFunc // the signal
	done   chan error         // serve's result
}

// startServed runs serve for h until the test cancels it (or ends).
func startServed(t *testing.T, h instanceHandler) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{base: "http://" + ln.Addr().String(), addr: ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- serve(ctx, h, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(ShutdownGrace + 2*time.Second):
			t.Error("serve did not return")
		}
	})
	return s
}

// wait returns serve's result, failing the test if it takes over within.
func (s *served) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve: %v, want nil after the signal", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(within):
		t.Fatalf("serve did not return within %v of the signal", within)
	}
}

// refuses reports whether a connection to s is refused.
func (s *served) refuses() bool {
	c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err != nil
}

// freshGet sends GET path on a connection of its own, over HTTP/1.1 or
// with h2 over h2c. Its header holds "Connection: close" when the answer
// asked to close the connection (which the client takes out of it).
func freshGet(t *testing.T, base, path string, h2 bool) result {
	t.Helper()
	tr := &http.Transport{}
	if h2 {
		tr = h2cTransport(t)
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.Close {
		resp.Header.Set("Connection", "close")
	}
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// TestShutdownAbrupt: on the signal a request in flight, over HTTP/1.1 or
// h2c, gets no answer but a connection error at once, serve returns at
// once and the listener refuses.
func TestShutdownAbrupt(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := map[bool]string{false: "HTTP/1.1", true: "h2c"}[h2]
		t.Run(name, func(t *testing.T) {
			s, err := New(Config{ID: 1, Workers: 2, Service: Fixed(0), Shutdown: Shutdown{Mode: ShutdownAbrupt}})
			if err != nil {
				t.Fatal(err)
			}
			srv := startServed(t, s)
			if err := s.SetFault(Slow{Latency: Duration(3 * time.Second)}); err != nil {
				t.Fatal(err)
			}
			inflight := make(chan result, 1)
			go func() { inflight <- freshGet(t, srv.base, "/", h2) }()
			waitFor(t, func() bool { return s.Stats().InFlight == 1 })

			signal := time.Now()
			srv.cancel()
			srv.wait(t, time.Second)
			select {
			case r := <-inflight:
				if r.err == nil {
					t.Errorf("the request in flight got %d %q, want no answer", r.status, r.body)
				}
				if took := time.Since(signal); took > time.Second {
					t.Errorf("the request in flight failed %v after the signal, want at once", took)
				}
			case <-time.After(time.Second):
				t.Fatal("the request in flight still waits 1s after the signal")
			}
			if !srv.refuses() {
				t.Error("the listener still accepts after an abrupt shutdown")
			}
		})
	}
}

// TestShutdownAbruptSidecar: a sidecar's forwarded request gets no answer
// either, and its upstream request is cancelled.
func TestShutdownAbruptSidecar(t *testing.T) {
	cancelled := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(3 * time.Second):
		}
	})
	sc, err := NewSidecar(SidecarConfig{ID: 2, Upstream: up.ts.URL, Shutdown: Shutdown{Mode: ShutdownAbrupt}})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServed(t, sc)
	inflight := make(chan result, 1)
	go func() { inflight <- freshGet(t, srv.base, "/", false) }()
	waitFor(t, func() bool { return up.hits.Load() == 1 }) // forwarded
	srv.cancel()
	srv.wait(t, time.Second)
	select {
	case r := <-inflight:
		if r.err == nil {
			t.Errorf("the forwarded request got %d %q, want no answer", r.status, r.body)
		}
	case <-time.After(time.Second):
		t.Fatal("the forwarded request still waits 1s after the signal")
	}
	select {
	case <-cancelled:
	case <-time.After(time.Second):
		t.Error("the upstream request was not cancelled")
	}
}

// TestShutdownDrain: for the delay after the signal the instance answers
// new connections and requests 200 with Connection: close (HTTP/2: an
// answer, then the connection's end), its health check 503; after the
// delay it finishes: the listener refuses and serve returns.
func TestShutdownDrain(t *testing.T) {
	const delay = 600 * time.Millisecond
	s, err := New(Config{ID: 4, Workers: 2, Service: Fixed(0), Shutdown: Shutdown{Mode: ShutdownDrain, Delay: delay}})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServed(t, s)
	if r := freshGet(t, srv.base, HealthPath, false); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("health before the signal: %d, %v", r.status, r.err)
	}
	if r := freshGet(t, srv.base, "/", false); r.err != nil || r.header.Get("Connection") == "close" {
		t.Fatalf("before the signal: %v, Connection %q; want keep-alive", r.err, r.header.Get("Connection"))
	}

	signal := time.Now()
	srv.cancel()
	time.Sleep(20 * time.Millisecond) // let serve see it
	r := freshGet(t, srv.base, HealthPath, false)
	if r.err != nil || r.status != http.StatusServiceUnavailable {
		t.Errorf("health during the drain: %d, %v; want 503", r.status, r.err)
	}
	r = freshGet(t, srv.base, "/", false)
	if r.err != nil || r.status != http.StatusOK || r.header.Get(InstanceHeader) != "4" {
		t.Errorf("a new connection during the drain: %d, %v; want 200 from instance 4", r.status, r.err)
	}
	if got := r.header.Get("Connection"); got != "close" {
		t.Errorf("an answer during the drain has Connection %q, want close", got)
	}
	if r := freshGet(t, srv.base, "/", true); r.err != nil || r.status != http.StatusOK {
		t.Errorf("h2c during the drain: %d, %v; want 200", r.status, r.err)
	}
	if since := time.Since(signal); since >= delay {
		t.Fatalf("the checks took %v, longer than the drain; the test proves nothing", since)
	}
	if srv.refuses() {
		t.Error("the listener refuses during the drain")
	}

	srv.wait(t, delay+time.Second)
	if took := time.Since(signal); took < delay {
		t.Errorf("serve returned %v after the signal, before the drain's %v", took, delay)
	}
	if !srv.refuses() {
		t.Error("the listener still accepts after the drain")
	}
}

// TestShutdownDrainSidecar: a sidecar drains the same way, its health
// check 503 without asking the upstream.
func TestShutdownDrainSidecar(t *testing.T) {
	const delay = 500 * time.Millisecond
	up := startUpstream(t, echo)
	sc, err := NewSidecar(SidecarConfig{ID: 6, Upstream: up.ts.URL, Shutdown: Shutdown{Mode: ShutdownDrain, Delay: delay}})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServed(t, sc)
	srv.cancel()
	time.Sleep(20 * time.Millisecond)
	if r := freshGet(t, srv.base, HealthPath, false); r.err != nil || r.status != http.StatusServiceUnavailable {
		t.Errorf("health during the drain: %d, %v; want 503", r.status, r.err)
	}
	r := freshGet(t, srv.base, "/x", false)
	if r.err != nil || r.status != http.StatusCreated || r.header.Get("Connection") != "close" {
		t.Errorf("during the drain: %d, %v, Connection %q; want the upstream's 201 with Connection: close", r.status, r.err, r.header.Get("Connection"))
	}
	srv.wait(t, delay+time.Second)
	if !srv.refuses() {
		t.Error("the listener still accepts after the drain")
	}
}

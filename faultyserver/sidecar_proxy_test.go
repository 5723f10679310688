package faultyserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver/upstream"
)

// The sidecar's side of the forwarding step (package upstream): what a
// client and the upstream see of a request forwarded through a Sidecar.

// rawExchange sends the raw request text req to addr on a new connection
// and reads the answer's head.
func rawExchange(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// What the upstream receives from a raw client's request through a
// sidecar: net/http on the client side adds nothing, so the upstream sees
// exactly what ProxyRequest and the upstream client make of it.
func TestProxyRequestThroughSidecar(t *testing.T) {
	tests := []struct {
		name  string
		extra string              // header lines of the raw request
		want  map[string][]string // at the upstream; nil value: absent
	}{
		{"no user-agent", "X-Forwarded-For: 1.2.3.4\r\n", map[string][]string{
			"User-Agent":        nil,
			"X-Forwarded-For":   {"1.2.3.4, 127.0.0.1"},
			"X-Forwarded-Host":  {"front.example"},
			"X-Forwarded-Proto": {"http"},
		}},
		{"user-agent", "User-Agent: curl/8\r\n", map[string][]string{
			"User-Agent":      {"curl/8"},
			"X-Forwarded-For": {"127.0.0.1"},
		}},
		{"hop-by-hop", "Connection: X-Hop, keep-alive\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n" +
			"Proxy-Authorization: Basic eDp5\r\nTe: trailers\r\nX-End: 2\r\n", map[string][]string{
			"Connection":          nil,
			"X-Hop":               nil,
			"Keep-Alive":          nil,
			"Proxy-Authorization": nil,
			"Te":                  {"trailers"},
			"X-End":               {"2"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(chan *http.Request, 1)
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) { seen <- r })
			sc := startSidecar(t, SidecarConfig{}, up)
			resp := rawExchange(t, sc.ts.Listener.Addr().String(), "GET /p?q=1 HTTP/1.1\r\nHost: front.example\r\n"+tt.extra+"\r\n")
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			r := <-seen
			if r.Host != "front.example" || r.URL.RequestURI() != "/p?q=1" {
				t.Errorf("upstream saw Host %q URI %q, want front.example /p?q=1", r.Host, r.URL.RequestURI())
			}
			for k, want := range tt.want {
				got, ok := r.Header[k]
				switch {
				case want == nil && ok:
					t.Errorf("upstream saw %s %q, want it absent; headers %v", k, got, r.Header)
				case want != nil && !reflect.DeepEqual(got, want):
					t.Errorf("upstream saw %s %q, want %q; headers %v", k, got, want, r.Header)
				}
			}
		})
	}
}

// The trailers of a chunked upstream answer reach the client, announced
// or not, with a slow factor holding the body too.
func TestProxySendProxiedTrailers(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault Fault
	}{
		{"no fault", nil},
		{"slow factor", Slow{Factor: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Trailer", "X-Checksum")
				_, _ = io.WriteString(w, "part one;")
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, "part two")
				w.Header().Set("X-Checksum", "abc")
				w.Header().Set(http.TrailerPrefix+"X-Late", "z")
			})
			sc := startSidecar(t, SidecarConfig{InitialFault: tt.fault}, up)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, sc.ts.URL+"/", nil)
			resp, err := sc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, ok := resp.Trailer["X-Checksum"]; !ok {
				t.Errorf("trailer X-Checksum not announced: Trailer %v", resp.Trailer)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || string(b) != "part one;part two" {
				t.Fatalf("body %q %v", b, err)
			}
			if got := resp.Trailer.Get("X-Checksum"); got != "abc" {
				t.Errorf("trailer X-Checksum %q, want abc; trailers %v", got, resp.Trailer)
			}
			if got := resp.Trailer.Get("X-Late"); got != "z" {
				t.Errorf("trailer X-Late %q, want z; trailers %v", got, resp.Trailer)
			}
		})
	}
}

// An upstream that dies in the middle of its body makes the client's
// read fail, not end cleanly, and leaves the sidecar's counts balanced.
func TestSendProxiedUpstreamDiesMidBody(t *testing.T) {
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush() // chunked: no length tells the end
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		c.Close()
	})
	sc := startSidecar(t, SidecarConfig{}, up)
	r := sc.get(t.Context(), "/")
	if r.err == nil || r.err == io.EOF {
		t.Errorf("%d %q %v, want an error reading the body", r.status, r.body, r.err)
	}
	if r.status != http.StatusOK || r.body != "partial" {
		t.Errorf("%d %q, want 200 and the part sent", r.status, r.body)
	}
	st := waitSidecar(t, sc.s, "the request to end", func(st Stats) bool { return st.InFlight == 0 })
	if st.Served+st.Failed+st.Dropped != 1 {
		t.Errorf("stats %+v, want the request counted once", st)
	}
	// The sidecar still forwards.
	if r := sc.get(t.Context(), "/"); r.err == nil || r.body != "partial" {
		t.Errorf("second request: %d %q %v, want the same broken answer", r.status, r.body, r.err)
	}
	waitSidecar(t, sc.s, "both requests to end", func(st Stats) bool {
		return st.InFlight == 0 && st.Served+st.Failed+st.Dropped == 2
	})
}

// Through a sidecar, a request on a connection the upstream closed while
// idle goes again on a new one: the client sees nothing of it.
func TestSidecarStaleUpstreamConnection(t *testing.T) {
	up := &upstreamServer{ts: httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))}
	var closed atomic.Int64
	up.ts.Config.IdleTimeout = 20 * time.Millisecond
	up.ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	up.ts.Start()
	t.Cleanup(up.ts.Close)
	sc := startSidecar(t, SidecarConfig{}, up)
	if r := sc.get(t.Context(), "/"); r.err != nil || r.status != 200 {
		t.Fatalf("first request: %d %v", r.status, r.err)
	}
	waitUntil(t, "the upstream to close the idle connection", func() bool { return closed.Load() == 1 })
	time.Sleep(5 * time.Millisecond) // let its FIN arrive
	r := sc.get(t.Context(), "/")
	if r.err != nil || r.status != 200 || r.body != "ok" {
		t.Errorf("second request: %d %q %v, want 200 \"ok\"", r.status, r.body, r.err)
	}
}

// A protocol upgrade goes through the sidecar, and the switched connection
// carries bytes both ways.
func TestSidecarUpgrade(t *testing.T) {
	seen := make(chan http.Header, 1)
	ended := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		if !upstream.IsUpgrade(r.Header) || r.Header.Get("Upgrade") != "lbchaos-echo" {
			http.Error(w, "want an upgrade to lbchaos-echo", http.StatusBadRequest)
			return
		}
		defer close(ended)
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: lbchaos-echo\r\n\r\n")
		_, _ = io.Copy(c, brw) // echo until the client closes
	})
	sc := startSidecar(t, SidecarConfig{ID: 7}, up)

	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", sc.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /chat HTTP/1.1\r\nHost: front.example\r\nConnection: Upgrade\r\nUpgrade: lbchaos-echo\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get(InstanceHeader) != "7" || resp.Header.Get("Upgrade") != "lbchaos-echo" {
		t.Fatalf("%s %v, want 101 to lbchaos-echo from instance 7", resp.Status, resp.Header)
	}
	if h := <-seen; h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Host") != "front.example" {
		t.Errorf("upstream saw %v, want X-Forwarded-For and X-Forwarded-Host set", h)
	}
	for _, msg := range []string{"ping\n", "a longer second message\n"} {
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != msg {
			t.Fatalf("echo %q %v, want %q", got, err, msg)
		}
	}
	c.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's side of the upgraded connection did not end after the client closed")
	}
	st := waitSidecar(t, sc.s, "the upgrade to end", func(st Stats) bool { return st.InFlight == 0 })
	if st.Served != 1 || st.Failed != 0 {
		t.Errorf("stats %+v, want the upgrade served once", st)
	}
}

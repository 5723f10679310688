package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connServer is an httptest server that counts the connections it opens
// and closes.
type connServer struct {
	*httptest.Server
	opened, closed atomic.Int64
}

// startConnServer runs h, with configure applied to the http.Server, until
// the test ends.
func startConnServer(t *testing.T, h http.HandlerFunc, configure func(*http.Server)) *connServer {
	t.Helper()
	s := &connServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	if configure != nil {
		configure(s.Config)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// newTestClient is a Client for addr, closed when the test ends (before
// servers started earlier in the test close).
func newTestClient(t *testing.T, addr string) *Client {
	u := New(addr)
	t.Cleanup(u.Close)
	return u
}

// result is one exchange's outcome, the whole body read.
type result struct {
	status int
	header http.Header
	body   string
	err    error
	took   time.Duration
}

// upDo sends method url (with body, if not nil) through u and reads the
// whole answer.
func upDo(ctx context.Context, u *Client, method, url string, body io.Reader) result {
	begin := time.Now()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return result{err: err}
	}
	resp, err := u.RoundTrip(req)
	if err != nil {
		return result{err: err, took: time.Since(begin)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err, took: time.Since(begin)}
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

func TestUpstreamReusesConnections(t *testing.T) {
	ts := startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path)
	}, nil)
	u := newTestClient(t, ts.Listener.Addr().String())
	for i := range 20 {
		r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/n", nil)
		if r.err != nil || r.status != 200 || r.body != "GET /n" {
			t.Fatalf("request %d: %d %q %v, want 200 \"GET /n\"", i, r.status, r.body, r.err)
		}
	}
	if n := ts.opened.Load(); n != 1 {
		t.Errorf("20 sequential requests opened %d connections, want 1", n)
	}
}

// A kept-alive connection that the upstream closed while it was idle: a
// request without a body goes again on a new connection, one with a body
// fails, since the client cannot tell what the upstream received.
func TestUpstreamStaleConnection(t *testing.T) {
	tests := []struct {
		name   string
		method string
		body   io.Reader
		ok     bool
	}{
		{"get", http.MethodGet, nil, true},
		{"post without body", http.MethodPost, nil, true},
		{"post with body", http.MethodPost, strings.NewReader("payload"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			ts := startShortIdleEcho(t, &hits)
			u := newTestClient(t, ts.Listener.Addr().String())
			if r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/", nil); r.err != nil || r.body != "GET " {
				t.Fatalf("first request: %q %v", r.body, r.err)
			}
			waitUntil(t, "the upstream to close the idle connection", func() bool { return ts.closed.Load() == 1 })
			time.Sleep(5 * time.Millisecond) // let its FIN arrive

			r := upDo(t.Context(), u, tt.method, ts.URL+"/", tt.body)
			if tt.ok {
				want := tt.method + " "
				if r.err != nil || r.status != 200 || r.body != want {
					t.Errorf("%d %q %v, want 200 %q on a new connection", r.status, r.body, r.err, want)
				}
				if n, h := ts.opened.Load(), hits.Load(); n != 2 || h != 2 {
					t.Errorf("%d connections, %d requests reached the upstream; want 2 and 2", n, h)
				}
				return
			}
			if r.err == nil {
				t.Errorf("%d %q, want an error", r.status, r.body)
			}
			if n, h := ts.opened.Load(), hits.Load(); n != 1 || h != 1 {
				t.Errorf("%d connections, %d requests reached the upstream; want 1 and 1 (not sent again)", n, h)
			}
			if !errors.Is(r.err, errStale) {
				t.Errorf("%v, want errStale", r.err)
			}
		})
	}
}

// startShortIdleEcho runs a connServer that answers "METHOD body",
// counting requests in hits, and closes a connection idle for 20 ms.
func startShortIdleEcho(t *testing.T, hits *atomic.Int64) *connServer {
	return startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+string(b))
	}, func(s *http.Server) { s.IdleTimeout = 20 * time.Millisecond })
}

// A connection idle for longer than probeIdle is checked before it is
// used: one the upstream closed meanwhile is dropped, and even a request
// with a body goes out on a new connection, once. A connection used again
// at once is not checked.
func TestUpstreamProbesIdleConnection(t *testing.T) {
	var hits atomic.Int64
	ts := startShortIdleEcho(t, &hits)
	u := newTestClient(t, ts.Listener.Addr().String())
	u.probeIdle = time.Millisecond
	if r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/", nil); r.err != nil || r.body != "GET " {
		t.Fatalf("first request: %q %v", r.body, r.err)
	}
	waitUntil(t, "the upstream to close the idle connection", func() bool { return ts.closed.Load() == 1 })
	time.Sleep(5 * time.Millisecond) // let its FIN arrive

	r := upDo(t.Context(), u, http.MethodPost, ts.URL+"/", strings.NewReader("payload"))
	if r.err != nil || r.status != 200 || r.body != "POST payload" {
		t.Fatalf("%d %q %v, want 200 %q on a new connection", r.status, r.body, r.err, "POST payload")
	}
	if n, h := ts.opened.Load(), hits.Load(); n != 2 || h != 2 {
		t.Errorf("%d connections, %d requests reached the upstream; want 2 and 2", n, h)
	}

	// A live idle connection passes the check and is used again. (An
	// upstream of its own, which keeps idle connections open: with 20 ms, a
	// busy machine's pause between two requests can close it first.)
	var liveHits atomic.Int64
	live := startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		liveHits.Add(1)
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+string(b))
	}, nil)
	lu := newTestClient(t, live.Listener.Addr().String())
	lu.probeIdle = time.Millisecond
	for i, body := range []string{"once", "again"} {
		if i > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if r := upDo(t.Context(), lu, http.MethodPost, live.URL+"/", strings.NewReader(body)); r.err != nil || r.body != "POST "+body {
			t.Fatalf("request %d to the live upstream: %q %v", i, r.body, r.err)
		}
	}
	if n, h := live.opened.Load(), liveHits.Load(); n != 1 || h != 2 {
		t.Errorf("%d connections, %d requests; want 1 and 2: the live idle connection used again", n, h)
	}
}

// A context that ends while the upstream is slow ends the exchange at
// once, before the head or in the body, and the connection is not used
// again.
func TestUpstreamCancel(t *testing.T) {
	release := make(chan struct{})
	ts := startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			_, _ = io.WriteString(w, "first")
			w.(http.Flusher).Flush()
		}
		if r.URL.Path != "/fast" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}, nil)
	t.Cleanup(func() { close(release) }) // before the server closes
	u := newTestClient(t, ts.Listener.Addr().String())
	const after = 50 * time.Millisecond

	t.Run("head", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(after, cancel)
		r := upDo(ctx, u, http.MethodGet, ts.URL+"/head", nil)
		if !errors.Is(r.err, context.Canceled) || r.took > time.Second {
			t.Errorf("%d %v after %v, want context.Canceled soon after the cancellation at %v", r.status, r.err, r.took, after)
		}
	})
	t.Run("body", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/body", nil)
		resp, err := u.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
			t.Fatalf("first chunk %q %v", buf, err)
		}
		begin := time.Now()
		time.AfterFunc(after, cancel)
		n, err := resp.Body.Read(buf)
		took := time.Since(begin)
		if err == nil || err == io.EOF || took > time.Second {
			t.Errorf("read %d bytes, %v after %v; want an error soon after the cancellation", n, err, took)
		}
		t.Logf("read after cancellation: %v", err)
	})
	if t.Failed() {
		return
	}
	if r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/fast", nil); r.err != nil || r.status != 200 {
		t.Fatalf("request after the cancellations: %d %v", r.status, r.err)
	}
	if n := ts.opened.Load(); n != 3 {
		t.Errorf("%d connections, want 3: a cancelled exchange's connection is not used again", n)
	}
}

// A body read to its end gives its connection back; one closed before
// its end does not.
func TestUpstreamBodyEndDecidesReuse(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		consume func(io.Reader) error
		reused  bool
	}{
		{"sized, read to the end", "/sized", func(r io.Reader) error { _, err := io.ReadAll(r); return err }, true},
		{"chunked, read to the end", "/chunked", func(r io.Reader) error { _, err := io.ReadAll(r); return err }, true},
		{"sized, one byte read", "/sized", func(r io.Reader) error { _, err := r.Read(make([]byte, 1)); return err }, false},
		{"chunked, one byte read", "/chunked", func(r io.Reader) error { _, err := r.Read(make([]byte, 1)); return err }, false},
		{"not read", "/sized", func(io.Reader) error { return nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "hello, ")
				if r.URL.Path == "/chunked" {
					w.(http.Flusher).Flush()
				}
				_, _ = io.WriteString(w, "world")
			}, nil)
			u := newTestClient(t, ts.Listener.Addr().String())
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+tt.path, nil)
			resp, err := u.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.consume(resp.Body); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if r := upDo(t.Context(), u, http.MethodGet, ts.URL+tt.path, nil); r.err != nil || r.body != "hello, world" {
				t.Fatalf("second request: %q %v", r.body, r.err)
			}
			want := int64(2)
			if tt.reused {
				want = 1
			}
			if n := ts.opened.Load(); n != want {
				t.Errorf("%d connections, want %d", n, want)
			}
		})
	}
}

// An upstream that answers before it has read a streamed request body: the
// answer comes back while the body is still being sent, and the
// connection, with half a request on it, is not used again.
func TestUpstreamAnswersBeforeBody(t *testing.T) {
	ts := startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upload" {
			// Answer without draining the body first.
			_ = http.NewResponseController(w).EnableFullDuplex()
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			w.(http.Flusher).Flush()
		}
	}, nil)
	u := newTestClient(t, ts.Listener.Addr().String())

	pr, pw := io.Pipe()
	fed := make(chan struct{})
	go func() { // an endless body
		defer close(fed)
		chunk := make([]byte, 32<<10)
		for {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
	}()
	defer func() {
		pr.Close()
		<-fed
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r := upDo(ctx, u, http.MethodPost, ts.URL+"/upload", pr)
	if r.err != nil || r.status != http.StatusRequestEntityTooLarge || r.body != "too large\n" {
		t.Fatalf("%d %q %v, want 413 \"too large\"", r.status, r.body, r.err)
	}
	if r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/", nil); r.err != nil || r.status != 200 {
		t.Fatalf("next request: %d %v", r.status, r.err)
	}
	if n := ts.opened.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the cut-short request's connection is not used again", n)
	}
}

// rawServer accepts connections on a loopback listener and hands each to
// serve, until the test ends; it counts the connections.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int64
}

func startRawServer(t *testing.T, serve func(c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// Informational answers before the final one are skipped.
func TestUpstreamSkipsInformational(t *testing.T) {
	tests := []struct {
		name    string
		preface string
	}{
		{"103 early hints", "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"},
		{"100 continue", "HTTP/1.1 100 Continue\r\n\r\n"},
		{"several", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.js>\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </b.js>\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startRawServer(t, func(c net.Conn) {
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, tt.preface+"HTTP/1.1 200 OK\r\nX-Final: yes\r\nContent-Length: 5\r\n\r\nhello"); err != nil {
						return
					}
				}
			})
			u := newTestClient(t, srv.ln.Addr().String())
			for i := range 2 {
				r := upDo(t.Context(), u, http.MethodGet, "http://"+srv.ln.Addr().String()+"/", nil)
				if r.err != nil || r.status != 200 || r.body != "hello" || r.header.Get("X-Final") != "yes" {
					t.Fatalf("request %d: %d %q %v %v, want the final 200 \"hello\"", i, r.status, r.body, r.err, r.header)
				}
			}
			if n := srv.accepted.Load(); n != 1 {
				t.Errorf("%d connections, want 1: the connection is kept after the final answer", n)
			}
		})
	}
}

// Close closes the idle connections and those given back later, and ends
// the client.
func TestUpstreamClose(t *testing.T) {
	ts := startConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}, nil)
	u := newTestClient(t, ts.Listener.Addr().String())
	if r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/", nil); r.err != nil || r.body != "ok" {
		t.Fatalf("%q %v", r.body, r.err)
	}
	// An answer under way when the client closes.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/", nil)
	resp, err := u.RoundTrip(req) // takes the idle connection
	if err != nil {
		t.Fatal(err)
	}
	if r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/", nil); r.err != nil { // a second, now idle
		t.Fatal(r.err)
	}
	u.Close()
	waitUntil(t, "the idle connection to close", func() bool { return ts.closed.Load() == 1 })
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
		t.Fatalf("body under way: %q %v", b, err)
	}
	resp.Body.Close()
	waitUntil(t, "the connection given back after Close to close", func() bool { return ts.closed.Load() == 2 })

	r := upDo(t.Context(), u, http.MethodGet, ts.URL+"/", nil)
	if !errors.Is(r.err, errClosed) {
		t.Errorf("request after Close: %d %v, want errClosed", r.status, r.err)
	}
	if n := ts.opened.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	u.Close() // idempotent
}

// An upstream that answers before it reads the request's body (which
// fills the socket buffers, so the write blocks): the connection is not
// kept for another request but closed once the writer has had its grace,
// which ends the write; the next request goes over a new connection.
func TestUpstreamEarlyAnswerClosesConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	closed := make(chan struct{}, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				// Read nothing more until the client gives up the
				// connection, then drain what it wrote.
				time.Sleep(2 * writeGrace)
				_, _ = io.Copy(io.Discard, c)
				closed <- struct{}{}
			}()
		}
	}()
	u := newTestClient(t, ln.Addr().String())
	big := strings.Repeat("x", 16<<20)
	start := time.Now()
	if r := upDo(t.Context(), u, http.MethodPost, "http://"+ln.Addr().String()+"/", strings.NewReader(big)); r.err != nil || r.body != "ok" {
		t.Fatalf("%q %v", r.body, r.err)
	}
	if took := time.Since(start); took >= writeGrace {
		t.Errorf("the answer took %v: its reader waited for the writer", took)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was not closed")
	}
	if r := upDo(t.Context(), u, http.MethodGet, "http://"+ln.Addr().String()+"/", nil); r.err != nil || r.body != "ok" {
		t.Fatalf("second request: %q %v", r.body, r.err)
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the first was not kept", n)
	}
}

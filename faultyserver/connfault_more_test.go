package faultyserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A refusal or a per-connection latency acts on connections accepted
// while it is in force, not on one that was open (idle, nothing read yet)
// before it was set.
func TestConnFaultOpenBeforeFault(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, f := range []Fault{Refuse{}, Latency{Per: PerConnection, Value: Duration(time.Minute)}} {
				n := tg.accepted.Load()
				conn := dialRaw(t, tg.url)
				waitUntil(t, "the instance to accept the connection", func() bool { return tg.accepted.Load() > n })
				tg.setFault(t, f)
				wantOK(t, conn.get(t, "/work"), "a connection accepted before "+Describe(f))
				tg.clearFault(t)
			}
		})
	}
}

// A Client's control requests never ride a connection of the data path:
// after a health check, a blackhole set through the same Client is
// cleared through it; and the instance closes a control request's
// connection after its answer.
func TestControlBesideData(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			kept := newClient(rawTimeout, true)
			defer kept.CloseIdleConnections()
			for _, c := range []*Client{{BaseURL: tg.url}, {BaseURL: tg.url, HTTP: kept}} {
				ctx, cancel := context.WithTimeout(t.Context(), rawTimeout)
				if err := c.Healthy(ctx); err != nil {
					t.Fatalf("Healthy: %v", err)
				}
				if err := c.SetFault(ctx, Blackhole{}); err != nil {
					t.Fatalf("SetFault: %v", err)
				}
				if err := c.ClearFault(ctx); err != nil {
					t.Fatalf("ClearFault after a health check, under blackhole: %v", err)
				}
				cancel()
			}

			conn := dialRaw(t, tg.url)
			conn.send(t, FaultPath, false)
			resp, r := conn.receive()
			if r.err != nil || r.status != 200 || !resp.Close {
				t.Fatalf("a control answer: %d, Connection %q, error %v; want 200 and Connection: close", r.status, r.header.Get("Connection"), r.err)
			}
			if _, err := conn.r.ReadByte(); err != io.EOF {
				t.Fatalf("after a control answer: %v, want EOF", err)
			}
		})
	}
}

// The download under way when a bandwidth limit is cleared goes on at
// full speed.
func TestConnFaultBandwidthCleared(t *testing.T) {
	for _, tg := range connTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			// connTestBody bytes at 256 B/s: 32 s.
			tg.setFault(t, Bandwidth{Rate: 256})
			c := newClient(time.Minute, false)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, tg.url+"/work", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req) // the headers, paced
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			tg.clearFault(t)
			begin := time.Now()
			b, err := io.ReadAll(resp.Body)
			if err != nil || len(b) != connTestBody {
				t.Fatalf("after clearing: %d bytes, %v; want %d", len(b), err, connTestBody)
			}
			if took := time.Since(begin); took > rawTimeout {
				t.Errorf("the rest of the answer took %v after clearing", took)
			}
		})
	}
}

// serveCounting serves h on a loopback port as serve does (on its own
// listener, h.Listener, with the same protocols) until the test ends, and
// counts the connections it accepts: a test that must know that the
// instance has accepted a connection waits for the count to grow.
func serveCounting(t testing.TB, h instanceHandler) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := new(atomic.Int64)
	hs := &http.Server{
		Handler:     h,
		Protocols:   serveProtocols(),
		ConnContext: connContext,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew { // after Accept has wrapped it
				accepted.Add(1)
			}
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(h.Listener(ln))
	}()
	t.Cleanup(func() {
		h.Close() // ends hangs, waits and delayed closes
		_ = hs.Close()
		<-done
		if g, ok := h.(interface{ Release() }); ok {
			g.Release()
		}
	})
	return "http://" + ln.Addr().String(), accepted
}

// rawConn is one client connection to an instance, on which a test sends
// HTTP/1.1 requests one after another: unlike an http.Client's, they are
// sure to share it.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, url string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{conn, bufio.NewReader(conn)}
}

// send writes a GET of path, with Connection: close when closing.
func (c *rawConn) send(t *testing.T, path string, closing bool) {
	t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
	if closing {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
}

// receive reads one answer, body included, within rawTimeout.
func (c *rawConn) receive() (*http.Response, result) {
	_ = c.SetReadDeadline(time.Now().Add(rawTimeout))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, result{err: err}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// get sends a GET of path and reads its answer, timed.
func (c *rawConn) get(t *testing.T, path string) result {
	t.Helper()
	begin := time.Now()
	c.send(t, path, false)
	_, r := c.receive()
	r.took = time.Since(begin)
	return r
}

// rawTimeout bounds what a test waits for on a raw connection: far
// longer than anything should take, even on a loaded machine, and far
// shorter than the faults whose absence it shows.
const rawTimeout = 10 * time.Second

// silent reports whether nothing (not even the connection's end) arrives
// on c within d.
func (c *rawConn) silent(d time.Duration) (bool, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.r.Peek(1)
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout(), err
}

// testState is an instance's state with no server, for tests of faultConn
// alone; it closes when the test ends.
func testState(t *testing.T) *instanceState {
	closed := make(chan struct{})
	t.Cleanup(func() { close(closed) })
	return &instanceState{closed: closed}
}

// tcpPair returns the two ends of a loopback TCP connection, closed when
// the test ends.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestFaultConnCloseWrite(t *testing.T) {
	s := testState(t)
	server, client := tcpPair(t)
	fc := newFaultConn(server, s)
	var _ interface{ CloseWrite() error } = fc // what net/http looks for
	if err := fc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(rawTimeout))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after CloseWrite: %v, want EOF", err)
	}
	// The other way is still open.
	if _, err := io.WriteString(client, "GET / HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.Read(make([]byte, 1)); err != nil {
		t.Fatalf("reading after CloseWrite: %v", err)
	}

	// Under slow-close the FIN waits for the delayed close.
	if err := s.SetFault(SlowClose{Delay: Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	server, client = tcpPair(t)
	fc = newFaultConn(server, s)
	if err := fc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var ne net.Error
	if _, err := client.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("after CloseWrite under slow-close: %v, want nothing", err)
	}
}

// A read waiting for its turn under a bandwidth limit goes on at full
// speed once the limit is cleared.
func TestFaultConnPacedReadCleared(t *testing.T) {
	s := testState(t)
	if err := s.SetFault(Bandwidth{Rate: 1}); err != nil {
		t.Fatal(err)
	}
	server, client := tcpPair(t)
	fc := newFaultConn(server, s)
	msg := "GET /work HTTP/1.1\r\n" + strings.Repeat("x", 200)
	if _, err := io.WriteString(client, msg); err != nil {
		t.Fatal(err)
	}
	_ = fc.SetReadDeadline(time.Now().Add(time.Minute))
	got := make([]byte, len(msg))
	if n, err := fc.Read(got); n != 1 || err != nil { // a byte a second
		t.Fatalf("first read under 1 B/s: %d bytes, %v; want 1", n, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(fc, got[1:])
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // most likely waiting by now
	s.ClearFault()
	select {
	case err := <-done:
		if err != nil || string(got) != msg {
			t.Fatalf("after clearing: %q, %v", got, err)
		}
	case <-time.After(rawTimeout): // 200 s at 1 B/s
		t.Fatal("the paced read went on after clearing")
	}
}

// A write waiting for its turn under a bandwidth limit honours the write
// deadline.
func TestFaultConnPacedWriteDeadline(t *testing.T) {
	for _, set := range []func(net.Conn, time.Time) error{net.Conn.SetWriteDeadline, net.Conn.SetDeadline} {
		s := testState(t)
		if err := s.SetFault(Bandwidth{Rate: 1}); err != nil {
			t.Fatal(err)
		}
		server, client := tcpPair(t)
		go func() { _, _ = io.Copy(io.Discard, client) }()
		fc := newFaultConn(server, s)
		_ = set(fc, time.Now().Add(200*time.Millisecond))
		n, err := fc.Write(make([]byte, 100))
		if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 100 {
			t.Fatalf("a paced write past its deadline: %d bytes, %v; want a deadline error", n, err)
		}
	}
}

func TestPaceChunk(t *testing.T) {
	for rate, want := range map[float64]int{1: 1, 10: 1, 20: 1, 256: 12, 16 << 10: 819, 1 << 20: 52428} {
		if got := paceChunk(rate); got != want {
			t.Errorf("paceChunk(%v) = %d, want %d", rate, got, want)
		}
	}
}

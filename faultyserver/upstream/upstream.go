// Package upstream is the HTTP/1.1 client and reverse-proxy step that the
// fault sidecar, lbchaos proxy and the harness's transport client share:
// a Client writes a request and reads its answer on the caller's goroutine,
// and the helpers of proxyhttp.go turn an inbound request into the one sent
// upstream and relay the answer back. It imports no package of this module.
package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Client sends HTTP/1.1 requests to one upstream over connections
// it keeps alive, on the caller's goroutine. net/http's Transport hands
// every request to a writer goroutine and every answer back from a reader
// goroutine; under load each of those hand-offs waits for a free processor,
// and on two cores the four of them made most of what a sidecar added to a
// request (BenchmarkSidecarAtBaseline). Here the handler that forwards a
// request writes it and reads the answer itself; only a request with a
// body is written from a second goroutine, so that an upstream that answers
// before it has read the body is heard at once.
type Client struct {
	addr    string // host:port
	dialer  net.Dialer
	maxIdle int
	// probeIdle: a connection idle for longer is checked before it is
	// used (upConn.alive), so that one the upstream closed meanwhile (a
	// keep-alive timeout) is not sent a request whose body cannot be sent
	// again. A shorter idle time is not checked: under load that would be
	// a read per request.
	probeIdle time.Duration

	mu     sync.Mutex
	idle   []*upConn // most recently used last
	closed bool
}

type upConn struct {
	c     net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // when it was last put back idle
}

// alive reports whether an idle connection can carry a request: nothing
// arrived on it while idle, neither bytes nor the upstream's close. It
// looks without waiting (connIdle).
func (pc *upConn) alive() bool {
	return pc.br.Buffered() == 0 && connIdle(pc.c)
}

// errClosed is what RoundTrip returns once the Client is closed.
var errClosed = errors.New("server closed")

// errStale is a kept-alive connection that the upstream had closed before
// the request reached it: nothing of the request was processed, so a
// request without a body is sent again on another connection.
var errStale = errors.New("faultyserver: upstream closed a kept-alive connection")

// aLongTimeAgo is a deadline in the past: setting it makes every blocked
// read and write on the connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// New returns a client of the upstream at addr (host:port). The sidecar
// forwards through one; lbchaos proxy and the harness's transport client through
// one per backend.
func New(addr string) *Client {
	return &Client{
		addr:      addr,
		dialer:    net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:   1024,
		probeIdle: time.Second,
	}
}

// RoundTrip sends req and reads the answer's head. The answer's body must
// be read to its end (then the connection is kept for the next request) or
// closed. req's context ends the exchange at any point: dial, write, head
// or body.
func (u *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for {
		pc, reused, err := u.conn(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := u.exchange(ctx, pc, req)
		if err == nil {
			return resp, nil
		}
		_ = pc.c.Close()
		if reused && errors.Is(err, errStale) && !hasBody(req) && ctx.Err() == nil {
			continue // a new connection, or another idle one
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
}

// hasBody reports whether req has a body to send: http.NoBody, which
// NewRequest sets for an empty one, is none.
func hasBody(req *http.Request) bool {
	return req.Body != nil && req.Body != http.NoBody
}

// SetMaxIdle sets how many idle connections u keeps (1024 unless set); set
// it before the first request.
func (u *Client) SetMaxIdle(n int) {
	u.mu.Lock()
	u.maxIdle = n
	u.mu.Unlock()
}

// SetLocalAddr makes u's connections come from ip; set it before the
// first request.
func (u *Client) SetLocalAddr(ip netip.Addr) {
	u.dialer.LocalAddr = &net.TCPAddr{IP: ip.AsSlice()}
}

// CloseIdle closes the connections kept idle; unlike Close, later requests
// are sent as before, over new connections.
func (u *Client) CloseIdle() {
	u.mu.Lock()
	idle := u.idle
	u.idle = nil
	u.mu.Unlock()
	for _, pc := range idle {
		_ = pc.c.Close()
	}
}

// conn returns an idle connection, or a new one.
func (u *Client) conn(ctx context.Context) (*upConn, bool, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, false, errClosed
	}
	for n := len(u.idle); n > 0; n = len(u.idle) {
		pc := u.idle[n-1]
		u.idle[n-1] = nil
		u.idle = u.idle[:n-1]
		u.mu.Unlock()
		if time.Since(pc.since) <= u.probeIdle || pc.alive() {
			return pc, true, nil
		}
		_ = pc.c.Close()
		u.mu.Lock()
	}
	u.mu.Unlock()
	c, err := u.dialer.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return nil, false, err
	}
	return &upConn{c: c, br: bufio.NewReaderSize(c, 4<<10), bw: bufio.NewWriterSize(c, 4<<10)}, false, nil
}

// put keeps pc for the next request, or closes it.
func (u *Client) put(pc *upConn) {
	u.mu.Lock()
	if !u.closed && len(u.idle) < u.maxIdle {
		pc.since = time.Now()
		u.idle = append(u.idle, pc)
		u.mu.Unlock()
		return
	}
	u.mu.Unlock()
	_ = pc.c.Close()
}

// Close closes the idle connections and every one returned later; requests
// under way end when their contexts do.
func (u *Client) Close() {
	u.mu.Lock()
	idle := u.idle
	u.idle, u.closed = nil, true
	u.mu.Unlock()
	for _, pc := range idle {
		_ = pc.c.Close()
	}
}

// exchange writes req on pc and reads the answer's head, skipping
// informational (1xx) answers.
func (u *Client) exchange(ctx context.Context, pc *upConn, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(aLongTimeAgo) })
	var wrote chan error
	if !hasBody(req) {
		err := req.Write(pc.bw)
		if err == nil {
			err = pc.bw.Flush()
		}
		if err != nil {
			stop()
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
				err = errStale // closed by the upstream before the request
			}
			return nil, err
		}
	} else {
		wrote = make(chan error, 1)
		go func() {
			err := req.Write(pc.bw)
			if err == nil {
				err = pc.bw.Flush()
			}
			wrote <- err
		}()
	}
	fail := func(err error) (*http.Response, error) {
		stop()
		return nil, err // the caller closes pc, which ends any write
	}
	// A connection the upstream closed while it was idle ends before the
	// first byte of an answer; ReadResponse would call that an unexpected
	// EOF, so look first.
	if _, err := pc.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			err = errStale
		}
		return fail(err)
	}
	for {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
			resp.Body = &upBody{rc: resp.Body, u: u, pc: pc, stop: stop, wrote: wrote, keep: keep}
			return resp, nil
		}
		// 1xx: 100 Continue, 103 Early Hints; the final answer follows.
	}
}

// upBody is an upstream answer's body; it gives its connection back when
// read to the end, and closes it when closed early or failed.
type upBody struct {
	rc    io.ReadCloser
	u     *Client
	pc    *upConn
	stop  func() bool
	wrote chan error // nil when the request had no body
	keep  bool
	once  sync.Once
}

func (b *upBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

func (b *upBody) Close() error {
	b.finish(false)
	return nil
}

// writeGrace bounds how long a connection whose answer was read in full
// waits for its request's writer to report: an upstream that keeps the
// connection reads the whole request first, so the writer has written it
// and only has to be scheduled to say so (on a busy machine that can take
// milliseconds); an upstream that answered before it read the whole body
// leaves the writer blocked, and the connection is closed.
const writeGrace = 100 * time.Millisecond

// keepWhenWritten gives the connection back once the writer reports the
// request written in full, or closes it when it reports a failure or does
// not report within writeGrace. It runs on a goroutine of its own, so that
// the reader of the answer does not wait.
func (b *upBody) keepWhenWritten() {
	t := time.NewTimer(writeGrace)
	defer t.Stop()
	select {
	case err := <-b.wrote:
		if err == nil {
			b.u.put(b.pc)
			return
		}
	case <-t.C:
	}
	_ = b.pc.c.Close() // which ends a write still blocked
}

// finish gives the connection back when the whole answer was read, the
// request was written in full and the context did not end the exchange;
// else it closes the connection.
func (b *upBody) finish(complete bool) {
	b.once.Do(func() {
		ok := b.stop() && complete && b.keep
		_ = b.rc.Close()
		if ok && b.wrote != nil {
			select {
			case err := <-b.wrote:
				ok = err == nil
			default:
				go b.keepWhenWritten()
				return
			}
		}
		if ok {
			b.u.put(b.pc)
		} else {
			_ = b.pc.c.Close()
		}
	})
}

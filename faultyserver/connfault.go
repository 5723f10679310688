package faultyserver

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A ConnFault acts on an instance's connections, below HTTP, as well as (or
// instead of) on its requests: the fake server and the sidecar carry it out
// in a wrapper of every connection they accept (Listener), whatever the
// protocol on it (HTTP/1.1, h2c, gRPC).
//
// The connections of lbchaos's own control API are exempt: a connection
// whose first bytes are a request for a path under ControlPrefix is left
// alone, so that the harness can always clear the fault it set. The
// instance answers every HTTP/1.1 control request with Connection: close,
// so that a connection found to be a control one never carries a request
// of the data path later, and Client sends its control requests on
// connections of their own, never on one a health check opened. Telling
// the kinds apart takes reading those first bytes: a blackhole, a refusal
// and a per-connection latency thus read (sniff) the start of a request
// before they stop reading, reset or wait, which the client cannot tell
// from a server that read nothing.
type ConnFault interface {
	Fault
	connEffects() connEffects
}

// connEffects are what a fault does to connections.
type connEffects struct {
	rate       float64       // bytes a second each way, per connection; 0 = unlimited
	blackhole  bool          // nothing more is read from any connection
	refuse     bool          // a new connection is reset at its first read
	handshake  time.Duration // a new connection waits this long at its first read
	closeDelay time.Duration // closing a connection waits this long
}

func (e connEffects) any() bool { return e != connEffects{} }

// connEffectsOf returns what f does to connections: nothing unless it is a
// ConnFault.
func connEffectsOf(f Fault) connEffects {
	if c, ok := f.(ConnFault); ok {
		return c.connEffects()
	}
	return connEffects{}
}

// Listener wraps ln so that the connections it accepts carry out the
// connection-level part of the instance's current fault (see ConnFault).
// Serve and its siblings wrap their listener themselves; a caller that
// runs a Server's or Sidecar's handler on its own http.Server wraps its
// listener with it.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return faultListener{ln, &s.instanceState}
}

// Listener wraps ln as Server.Listener does.
func (s *Sidecar) Listener(ln net.Listener) net.Listener {
	return faultListener{ln, &s.instanceState}
}

type faultListener struct {
	net.Listener
	s *instanceState
}

// Accept wraps each accepted connection.
func (l faultListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newFaultConn(c, l.s), nil
}

// A connection's kind, known once its first bytes are read.
const (
	connUnknown int32 = iota
	connControl       // a control API client's: exempt
	connData
)

// sniffMax bounds the bytes read to tell a control connection: the longest
// method and ControlPrefix.
const sniffMax = len("DELETE ") + len(ControlPrefix)

// faultConn is an accepted connection that carries out its instance's
// connection-level fault. Every wait and every chunk of a paced transfer
// looks the fault up again, and a wait ends when the fault it waits under
// is replaced, so that a fault set or cleared while the connection is open
// applies from then on: a blackhole or a bandwidth limit to the bytes not
// yet moved, a slow close to a close not yet made. A refusal and a
// per-connection latency act on a connection's opening, so only on one
// accepted while they were in force, at its first read if they still are.
// The server reads it from one goroutine at a time and may write it from
// another.
type faultConn struct {
	net.Conn
	s        *instanceState
	kind     atomic.Int32
	accepted connEffects // the fault's in force at accept

	// Read side, touched by the reading goroutine only.
	pending []byte    // read while telling the kind, not yet returned
	opened  bool      // the connection's first read is done
	rbox    *faultBox // the fault rnext was worked out under
	rnext   time.Time // bandwidth: when the next bytes may be read

	wmu   sync.Mutex
	wbox  *faultBox // the fault wnext was worked out under
	wnext time.Time // bandwidth: when the next bytes may be written

	rdl, wdl deadline // the read and write deadlines, which waits honour

	closeOnce sync.Once
	closed    chan struct{}
}

func newFaultConn(c net.Conn, s *instanceState) *faultConn {
	fc := &faultConn{Conn: c, s: s, closed: make(chan struct{})}
	if b := s.fault.Load(); b != nil {
		fc.accepted = b.conn
	}
	return fc
}

// NetConn returns the connection wrapped, for an abortive close.
func (c *faultConn) NetConn() net.Conn { return c.Conn }

// current returns the current fault's box, nil when there is none or the
// connection is exempt.
func (c *faultConn) current() *faultBox {
	if c.kind.Load() == connControl {
		return nil
	}
	b := c.s.fault.Load()
	if b == nil || !b.conn.any() {
		return nil
	}
	return b
}

// errRefused is what a read of a refused connection returns.
var errRefused = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

func (c *faultConn) Read(p []byte) (int, error) {
	if c.kind.Load() == connUnknown {
		if err := c.sniff(); err != nil && len(c.pending) == 0 {
			return 0, err
		}
	}
	if !c.opened {
		c.opened = true
		if err := c.open(); err != nil {
			return 0, err
		}
	}
	for {
		if err := c.holdWhileBlackholed(); err != nil {
			return 0, err
		}
		n, again, err := c.readPaced(p)
		if again {
			continue
		}
		if n == 0 || !c.blackholed() {
			return n, err
		}
		// A blackhole began while the read waited in the kernel: hold
		// what it brought until the blackhole ends.
		c.pending = append(append([]byte(nil), p[:n]...), c.pending...)
	}
}

// open carries out, at the connection's first read, the refusal or the
// per-connection latency that was in force when it was accepted and still
// is: it resets the connection, or waits. A latency's wait ends early when
// the fault is cleared or replaced by one without a latency.
func (c *faultConn) open() error {
	b := c.current()
	if b == nil {
		return nil
	}
	if c.accepted.refuse && b.conn.refuse {
		abortiveClose(c)
		return errRefused
	}
	if c.accepted.handshake <= 0 || b.conn.handshake <= 0 {
		return nil
	}
	until := time.Now().Add(b.conn.handshake)
	for b != nil && b.conn.handshake > 0 && time.Now().Before(until) {
		if err := c.wait(&c.rdl, until, b.gone); err != nil {
			return err
		}
		b = c.current()
	}
	return nil
}

// blackholed reports whether the current fault stops reading.
func (c *faultConn) blackholed() bool {
	b := c.current()
	return b != nil && b.conn.blackhole
}

// holdWhileBlackholed blocks while the current fault stops reading.
func (c *faultConn) holdWhileBlackholed() error {
	for {
		b := c.current()
		if b == nil || !b.conn.blackhole {
			return nil
		}
		if err := c.wait(&c.rdl, time.Time{}, b.gone); err != nil {
			return err
		}
	}
}

// readPaced reads at the current fault's rate, if it has one. again
// reports that the fault was replaced while it waited for its turn, and
// nothing was read: the caller looks at the new fault first.
func (c *faultConn) readPaced(p []byte) (n int, again bool, err error) {
	b := c.current()
	if b == nil || b.conn.rate <= 0 {
		n, err = c.read(p)
		return n, false, err
	}
	if c.rbox != b {
		c.rbox, c.rnext = b, time.Time{}
	}
	if time.Now().Before(c.rnext) {
		if err := c.wait(&c.rdl, c.rnext, b.gone); err != nil {
			return 0, false, err
		}
		if c.current() != b {
			return 0, true, nil
		}
	}
	n, err = c.read(p[:min(len(p), paceChunk(b.conn.rate))])
	c.rnext = pace(c.rnext, n, b.conn.rate)
	return n, false, err
}

// read returns the bytes read while sniffing first, then reads the
// connection.
func (c *faultConn) read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// sniff reads the connection's first bytes, until they tell whether it is
// a control API client's, and keeps them for read.
func (c *faultConn) sniff() error {
	var buf [512]byte
	for {
		n, err := c.Conn.Read(buf[:])
		c.pending = append(c.pending, buf[:n]...)
		if k := connKind(c.pending); k != connUnknown {
			c.kind.Store(k)
			return nil
		}
		if err != nil {
			c.kind.Store(connData)
			return err
		}
	}
}

// connKind tells a connection's kind from its first bytes: connControl
// when they start a request for a path under ControlPrefix, connData when
// they cannot, connUnknown while too few have arrived to tell.
func connKind(b []byte) int32 {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		if len(b) >= sniffMax {
			return connData
		}
		return connUnknown
	}
	method, rest := b[:sp], b[sp+1:]
	switch string(method) {
	case "GET", "PUT", "POST", "DELETE":
	default:
		return connData
	}
	n := min(len(rest), len(ControlPrefix))
	if string(rest[:n]) != ControlPrefix[:n] {
		return connData
	}
	if n == len(ControlPrefix) {
		return connControl
	}
	return connUnknown
}

// Close closes the connection, after the current fault's close delay; a
// delayed close happens at once when the instance closes.
func (c *faultConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	if d := c.closeDelay(); d > 0 {
		go c.closeAfter(d)
		return nil
	}
	return c.Conn.Close()
}

// closeDelay is the current fault's close delay, 0 for none.
func (c *faultConn) closeDelay() time.Duration {
	if b := c.current(); b != nil {
		return b.conn.closeDelay
	}
	return 0
}

// closeAfter closes the connection after d, or when the instance closes.
func (c *faultConn) closeAfter(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.s.closed:
	}
	_ = c.Conn.Close()
}

// CloseWrite shuts the connection's sending side (a FIN) when the
// connection wrapped can (*net.TCPConn can), as net/http does before it
// closes a connection whose client may still be sending; it does nothing
// when the connection cannot, and under a close delay, where the FIN goes
// with the delayed close.
func (c *faultConn) CloseWrite() error {
	if c.closeDelay() > 0 {
		return nil
	}
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Unmodeled says why a simulator that plans requests one by one cannot
// model f (its effect is on bytes or connections, or in the kernel), or
// returns "" when Plan gives its effect.
func Unmodeled(f Fault) string {
	if u, ok := f.(interface{ unmodeled() string }); ok {
		return u.unmodeled()
	}
	return ""
}

// SimulatedPlan is what a client sees of one request under fault f, for a
// simulator that models requests but not connections: f's Plan, but for a
// fault that acts on connections or packets, whose effect on a request it
// gives as a plan (a blackhole's requests hang; a refusal's are reset, as
// for a client that opens a connection per request; loss delays some by
// the retransmissions). base and r are as for Plan. Where it departs from
// Plan it may draw from r differently: under loss it draws from r for each
// request, where the server's Plan draws nothing (see Loss).
func SimulatedPlan(f Fault, base time.Duration, r *rand.Rand) Action {
	if s, ok := f.(interface {
		planSeen(time.Duration, *rand.Rand) Action
	}); ok {
		return s.planSeen(base, r)
	}
	return f.Plan(base, r)
}

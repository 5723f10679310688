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
// alone, so that the harness can always clear the fault it set. Telling
// them apart takes reading those first bytes; a blackhole or a refusal
// thus reads the start of a request before it stops reading or resets,
// which its client cannot tell from a server that read nothing.
type ConnFault interface {
	Fault
	connEffects() connEffects
}

// connEffects are what a fault does to connections.
type connEffects struct {
	rate       float64       // bytes a second each way, per connection; 0 = unlimited
	blackhole  bool          // nothing more is read from any connection
	refuse     bool          // a new connection is reset before it is read
	handshake  time.Duration // a new connection waits this long before it is read
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
// connection-level fault, checked afresh at every Read, Write and Close,
// so that a fault set or cleared while it is open applies from then on.
// The server reads it from one goroutine at a time and may write it from
// another.
type faultConn struct {
	net.Conn
	s    *instanceState
	kind atomic.Int32

	// Read side, touched by the reading goroutine only.
	pending []byte    // read while telling the kind, not yet returned
	opened  bool      // the connection's first read is done
	rnext   time.Time // bandwidth: when the next bytes may be read

	wmu   sync.Mutex
	wnext time.Time // bandwidth: when the next bytes may be written

	dmu      sync.Mutex
	deadline time.Time     // the read deadline, which waits honour
	dchanged chan struct{} // closed when the read deadline changes; made by a wait

	closeOnce sync.Once
	closed    chan struct{}
}

func newFaultConn(c net.Conn, s *instanceState) *faultConn {
	return &faultConn{Conn: c, s: s, closed: make(chan struct{})}
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
		if b := c.current(); b != nil {
			if b.conn.refuse {
				abortiveClose(c)
				return 0, errRefused
			}
			if d := b.conn.handshake; d > 0 {
				if err := c.wait(time.Now().Add(d), nil); err != nil {
					return 0, err
				}
			}
		}
	}
	for {
		if err := c.holdWhileBlackholed(); err != nil {
			return 0, err
		}
		n, err := c.readPaced(p)
		if n == 0 || !c.blackholed() {
			return n, err
		}
		// A blackhole began while the read waited in the kernel: hold
		// what it brought until the blackhole ends.
		c.pending = append(append([]byte(nil), p[:n]...), c.pending...)
	}
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
		if err := c.wait(time.Time{}, b.gone); err != nil {
			return err
		}
	}
}

// readPaced reads at the current fault's rate, if it has one.
func (c *faultConn) readPaced(p []byte) (int, error) {
	b := c.current()
	if b == nil || b.conn.rate <= 0 {
		return c.read(p)
	}
	if c.rnext.After(time.Now()) {
		if err := c.wait(c.rnext, nil); err != nil {
			return 0, err
		}
	}
	p = p[:min(len(p), paceChunk(b.conn.rate))]
	n, err := c.read(p)
	c.rnext = pace(c.rnext, n, b.conn.rate)
	return n, err
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

func (c *faultConn) Write(p []byte) (int, error) {
	b := c.current()
	if b == nil || b.conn.rate <= 0 {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for written < len(p) {
		if err := c.sleepUntil(c.wnext); err != nil {
			return written, err
		}
		n, err := c.Conn.Write(p[written:min(len(p), written+paceChunk(b.conn.rate))])
		written += n
		c.wnext = pace(c.wnext, n, b.conn.rate)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// paceChunk is the most bytes a rate-limited connection moves at once: a
// twentieth of a second's worth, at least 256.
func paceChunk(rate float64) int { return max(256, int(rate/20)) }

// pace returns when the next bytes may move after n moved at rate, having
// been allowed from next.
func pace(next time.Time, n int, rate float64) time.Time {
	now := time.Now()
	if next.Before(now) {
		next = now
	}
	return next.Add(time.Duration(float64(n) / rate * float64(time.Second)))
}

// Close closes the connection, after the current fault's close delay.
func (c *faultConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	if b := c.current(); b != nil && b.conn.closeDelay > 0 {
		time.AfterFunc(b.conn.closeDelay, func() { _ = c.Conn.Close() })
		return nil
	}
	return c.Conn.Close()
}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

// setReadDeadline records t for the waits of Read, and wakes them.
func (c *faultConn) setReadDeadline(t time.Time) {
	c.dmu.Lock()
	c.deadline = t
	if c.dchanged != nil { // a wait is under way: wake it
		close(c.dchanged)
		c.dchanged = nil
	}
	c.dmu.Unlock()
}

// wait blocks a read until until (zero: for ever) or until wake is closed,
// and fails when the connection closes or its read deadline passes first,
// as a read blocked in the kernel would.
func (c *faultConn) wait(until time.Time, wake <-chan struct{}) error {
	for {
		c.dmu.Lock()
		if c.dchanged == nil {
			c.dchanged = make(chan struct{})
		}
		deadline, changed := c.deadline, c.dchanged
		c.dmu.Unlock()
		end, timeout := until, false
		if !deadline.IsZero() && (end.IsZero() || deadline.Before(end)) {
			end, timeout = deadline, true
		}
		var fire <-chan time.Time
		var timer *time.Timer
		if !end.IsZero() {
			d := time.Until(end)
			if d <= 0 {
				if timeout {
					return os.ErrDeadlineExceeded
				}
				return nil
			}
			timer = time.NewTimer(d)
			fire = timer.C
		}
		var err error
		again := false
		select {
		case <-fire:
			if timeout {
				err = os.ErrDeadlineExceeded
			}
		case <-wake:
		case <-changed:
			again = true
		case <-c.closed:
			err = net.ErrClosed
		case <-c.s.closed:
			err = net.ErrClosed
		}
		if timer != nil {
			timer.Stop()
		}
		if !again {
			return err
		}
	}
}

// sleepUntil blocks a write until t, or fails when the connection closes.
func (c *faultConn) sleepUntil(t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-c.closed:
		return net.ErrClosed
	case <-c.s.closed:
		return net.ErrClosed
	}
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
// the retransmissions). base and r are as for Plan.
func SimulatedPlan(f Fault, base time.Duration, r *rand.Rand) Action {
	if s, ok := f.(interface {
		planSeen(time.Duration, *rand.Rand) Action
	}); ok {
		return s.planSeen(base, r)
	}
	return f.Plan(base, r)
}

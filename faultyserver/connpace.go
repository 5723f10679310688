package faultyserver

import (
	"net"
	"os"
	"sync"
	"time"
)

// The waits of faultConn: bandwidth's pacing both ways, and the holds of
// Read (connfault.go).

// Write writes p, at the current fault's rate if it has one. The rate is
// looked up again before each chunk, so that a limit set, changed or
// cleared during a long write applies to the bytes not yet written.
func (c *faultConn) Write(p []byte) (int, error) {
	if b := c.current(); b == nil || b.conn.rate <= 0 {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for written < len(p) {
		b := c.current()
		if b == nil || b.conn.rate <= 0 {
			n, err := c.Conn.Write(p[written:])
			return written + n, err
		}
		if c.wbox != b {
			c.wbox, c.wnext = b, time.Time{}
		}
		if time.Now().Before(c.wnext) {
			if err := c.wait(&c.wdl, c.wnext, b.gone); err != nil {
				return written, err
			}
			continue // the fault may have changed meanwhile
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
// twentieth of a second's worth, at least one byte, so that the pacing's
// steps are at most 50 ms apart down to 20 bytes a second (and one byte
// apart below).
func paceChunk(rate float64) int { return max(1, int(rate/20)) }

// pace returns when the next bytes may move after n moved at rate, having
// been allowed from next.
func pace(next time.Time, n int, rate float64) time.Time {
	now := time.Now()
	if next.Before(now) {
		next = now
	}
	return next.Add(time.Duration(float64(n) / rate * float64(time.Second)))
}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return c.Conn.SetDeadline(t)
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.rdl.set(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.wdl.set(t)
	return c.Conn.SetWriteDeadline(t)
}

// deadline is a read or write deadline as the connection's waits see it.
type deadline struct {
	mu      sync.Mutex
	t       time.Time     // zero: none
	changed chan struct{} // closed when t changes; made by a wait
}

// set records t and wakes the waits under the deadline it replaces.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.t = t
	if d.changed != nil { // a wait is under way: wake it
		close(d.changed)
		d.changed = nil
	}
	d.mu.Unlock()
}

// get returns the deadline and a channel closed when it changes.
func (d *deadline) get() (time.Time, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.t, d.changed
}

// wait blocks a read or a write until until (zero: for ever) or until wake
// is closed, and fails when the connection or the instance closes or when
// dl, the read or write deadline, passes first, as a read or write blocked
// in the kernel would.
func (c *faultConn) wait(dl *deadline, until time.Time, wake <-chan struct{}) error {
	for {
		limit, changed := dl.get()
		end, timeout := until, false
		if !limit.IsZero() && (end.IsZero() || limit.Before(end)) {
			end, timeout = limit, true
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

package faultyserver

import (
	"errors"
	"net"
	"net/http"
)

// cutWriter passes the first bytes of an answer's body and cuts the answer
// off there (the cut fault): it flushes what it passed, then closes the
// request's connection, or resets it (HTTP/1.1), or its stream (HTTP/2).
type cutWriter struct {
	http.ResponseWriter
	r     *http.Request
	left  int64 // body bytes still to pass
	reset bool
	cut   bool
}

// errCut is what a write past the cut returns.
var errCut = errors.New("faultyserver: answer cut off by the cut fault")

// newCutWriter returns w cutting its body after a.CutAfter bytes.
func newCutWriter(w http.ResponseWriter, r *http.Request, a Action) *cutWriter {
	return &cutWriter{ResponseWriter: w, r: r, left: a.CutAfter, reset: a.CutReset}
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, errCut
	}
	if int64(len(p)) <= c.left {
		c.left -= int64(len(p))
		return c.ResponseWriter.Write(p)
	}
	n, err := c.ResponseWriter.Write(p[:c.left])
	c.left = 0
	if err != nil {
		return n, err
	}
	c.cutOff()
	return n, errCut
}

// cutOff ends the answer where it stands.
func (c *cutWriter) cutOff() {
	c.cut = true
	rc := http.NewResponseController(c.ResponseWriter)
	_ = rc.Flush()
	if conn, _, err := rc.Hijack(); err == nil { // HTTP/1.1
		if c.reset {
			abortiveClose(conn)
		} else {
			_ = conn.Close()
		}
		return
	}
	// HTTP/2: a reset ends the stream; a close, the connection.
	if conn, ok := c.r.Context().Value(connKey{}).(net.Conn); ok && !c.reset {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// Flush flushes what has passed.
func (c *cutWriter) Flush() {
	if !c.cut {
		_ = http.NewResponseController(c.ResponseWriter).Flush()
	}
}

// Unwrap returns the ResponseWriter cut, for http.ResponseController.
func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

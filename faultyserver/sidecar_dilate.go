package faultyserver

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// dilatedBody delivers an upstream body on a clock slowed down by scale:
// a chunk that arrived t after start is delivered scale×t after start, so
// a streamed answer keeps its shape and the whole answer ends at scale
// times the upstream's time. A goroutine reads ahead, timestamping chunks
// as they arrive, up to dilatedAhead chunks; an upstream faster than that
// is held back by the ordinary flow control and its later chunks are
// stamped late.
type dilatedBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	start  time.Time
	scale  float64
	closed <-chan struct{}

	chunks chan chunk
	quit   chan struct{}
	once   sync.Once

	cur []byte // the undelivered rest of the current chunk
	err error  // the error after cur
}

type chunk struct {
	b   []byte
	at  time.Time
	err error
}

const (
	dilatedAhead = 16
	dilatedChunk = 16 << 10
)

func newDilatedBody(ctx context.Context, rc io.ReadCloser, start time.Time, scale float64, closed <-chan struct{}) *dilatedBody {
	d := &dilatedBody{rc: rc, ctx: ctx, start: start, scale: scale, closed: closed,
		chunks: make(chan chunk, dilatedAhead), quit: make(chan struct{})}
	go d.pump()
	return d
}

func (d *dilatedBody) pump() {
	for {
		buf := make([]byte, dilatedChunk)
		n, err := d.rc.Read(buf)
		select {
		case d.chunks <- chunk{b: buf[:n], at: time.Now(), err: err}:
		case <-d.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

func (d *dilatedBody) Read(p []byte) (int, error) {
	for len(d.cur) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		var c chunk
		select {
		case c = <-d.chunks:
		case <-d.quit:
			return 0, errors.New("faultyserver: read of a closed body")
		}
		at := d.start.Add(clampDuration(float64(c.at.Sub(d.start)) * d.scale))
		if err := sleepUntil(d.ctx, at, d.closed); err != nil {
			d.err = err
			return 0, err
		}
		d.cur, d.err = c.b, c.err
	}
	n := copy(p, d.cur)
	d.cur = d.cur[n:]
	if len(d.cur) == 0 && d.err != nil {
		return n, d.err
	}
	return n, nil
}

// Close stops the read-ahead and closes the upstream body, which ends any
// read in progress.
func (d *dilatedBody) Close() error {
	d.once.Do(func() { close(d.quit) })
	return d.rc.Close()
}

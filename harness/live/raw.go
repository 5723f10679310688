package live

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// rawWriter encodes results in Vegeta's format on a goroutine of its own,
// so that file output never slows the loop that collects results. A write
// error (a full disk) stops the raw data, not the run: the results that
// follow are discarded, and the file, which would end mid-record, is
// removed (freeing its space for the summary). note says so.
//
// What is kept of a result is what `vegeta report` and `vegeta plot` read
// (time, latency, status, error, bytes in and out, the attack's name) and
// the request's method and URL; not the response's headers and body, nor
// the sequence number, which neither reads and which, results arriving out
// of order, costs a fifth of the compressed file (see add). The gob stream
// is compressed with Zstandard: about 9 bytes a result on disk instead of
// about 270.
type rawWriter struct {
	ch   chan *vegeta.Result
	done chan struct{}
	once sync.Once
	rel  string // the file's path in the run's directory, for notes

	// Set by the encoder goroutine before done closes.
	err      error     // why the raw data stopped; nil when all was written
	failedAt time.Time // the send time of the first result not written
	removed  bool      // the partial file was removed after the error
}

// rawFile is the raw results file while it is written: it becomes its
// name when all is written (Close) and is removed otherwise (Abort).
type rawFile struct{ *reports.AtomicFile }

func (f rawFile) Close() error { return f.Commit() }

func newRawWriter(path string) (*rawWriter, error) {
	f, err := reports.CreateAtomic(path, 0o644)
	if err != nil {
		return nil, err
	}
	return newRawEncoder(rawFile{f}, true), nil
}

// rawFlushAt is how many bytes of encoded results, before compression,
// are written at once: several hundred results.
const rawFlushAt = 64 << 10

// aborter is a destination that can be discarded rather than closed.
type aborter interface{ Abort() }

// newRawEncoder encodes results to f, Zstandard-compressed when compress
// is set (a file; a generator's stream is not), closed by close; after a
// write error f is discarded instead when it can be (aborter).
//
// The compressor is built here, before the attack starts, not by the
// encoding goroutine: at its best level NewWriter allocates its tables,
// which with the race detector stops every goroutine for 0.1-0.7 s (1-2 ms
// without), and a generator stopped for the attack's duration at its
// start sends nothing at all.
func newRawEncoder(f io.WriteCloser, compress bool) *rawWriter {
	w := &rawWriter{ch: make(chan *vegeta.Result, 1<<14), done: make(chan struct{})}
	var zw interface {
		io.Writer
		Flush() error
		Close() error
	} = nopFlusher{f}
	if compress {
		// One goroutine, so that every write to f happens in Flush or
		// Close below and its error is known to lose the results since
		// the last flush. An error (of the options; not expected)
		// discards every result and the file, as a write error does.
		if z, err := zstd.NewWriter(f, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBestCompression)); err != nil {
			w.err, w.failedAt = err, time.Now()
		} else {
			zw = z
		}
	}
	go func() {
		defer close(w.done)
		// The buffer is flushed here, every rawFlushAt bytes, and never
		// fills by itself (no record is that long), so that a write error
		// is known to lose the results since the last flush: since is the
		// send time of the first of them.
		bw := bufio.NewWriterSize(zw, 4*rawFlushAt)
		enc := vegeta.NewEncoder(bw)
		var since time.Time
		fail := func(err error) { w.err, w.failedAt = err, since }
		flush := func() error {
			if err := bw.Flush(); err != nil {
				return err
			}
			return zw.Flush()
		}
		for r := range w.ch {
			if w.err != nil {
				continue
			}
			if bw.Buffered() == 0 {
				since = r.Timestamp
			}
			if err := enc(r); err != nil {
				fail(err)
			} else if bw.Buffered() >= rawFlushAt {
				if err := flush(); err != nil {
					fail(err)
				}
			}
		}
		if w.err == nil {
			if err := bw.Flush(); err != nil {
				fail(err)
			} else if err := zw.Close(); err != nil {
				fail(err)
			}
		}
		if w.err == nil {
			if err := f.Close(); err != nil {
				fail(err) // since: the results of the last flush
			}
			return
		}
		if a, ok := f.(aborter); ok {
			a.Abort()
			w.removed = true
			return
		}
		_ = f.Close()
	}()
	return w
}

// nopFlusher is an uncompressed destination: nothing to flush or close
// before f itself.
type nopFlusher struct{ io.Writer }

func (nopFlusher) Flush() error { return nil }
func (nopFlusher) Close() error { return nil }

// add queues a copy of r without its response headers and body and its
// sequence number, which Vegeta's report and plot do not read (BytesIn
// keeps the body's length); it blocks only when the encoder is 16384
// results behind.
func (w *rawWriter) add(r *vegeta.Result) {
	c := *r
	c.Headers, c.Body, c.Seq = nil, nil, 0
	w.ch <- &c
}

// close waits until everything queued is written, or discarded after an
// error, and returns that error; idempotent.
func (w *rawWriter) close() error {
	w.once.Do(func() { close(w.ch) })
	<-w.done
	return w.err
}

// note closes w and returns the note on raw data that stopped early,
// with times from start; "" when all was written.
func (w *rawWriter) note(name string, start time.Time) string {
	if w == nil || w.close() == nil {
		return ""
	}
	what := w.rel + " was not kept"
	if w.removed {
		what = "the partial " + w.rel + " was removed"
	}
	why := w.err
	var pe *fs.PathError
	if errors.As(why, &pe) {
		why = pe.Err // "no space left on device", without the temporary file's name
	}
	return fmt.Sprintf("%s: raw data stopped at %.1f s: %v; %s, and the summary covers the whole run.",
		name, w.failedAt.Sub(start).Seconds(), why, what)
}

// rawPath returns the path of file in job's strategy directory under
// dir, creating that directory, and the path relative to dir.
func rawPath(dir string, job engine.Job, file string) (abs, rel string, err error) {
	sub := reports.StrategyDirs(job.Exp.Strategies)[job.Index]
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
		return "", "", err
	}
	rel = path.Join(sub, file)
	return filepath.Join(dir, filepath.FromSlash(rel)), rel, nil
}

func writeHDRLog(dir string, job engine.Job, coll *engine.Collector, start, end time.Time) error {
	p, _, err := rawPath(dir, job, reports.HDRLogFile)
	if err != nil {
		return err
	}
	f, err := reports.CreateAtomic(p, 0o644)
	if err != nil {
		return err
	}
	if err := coll.WriteHDRLog(f, job.Name(), start, end); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// openRaw opens job's raw results file in dir, or returns nil when dir is
// "" (no raw results kept).
func openRaw(dir string, job engine.Job) (*rawWriter, error) {
	if dir == "" {
		return nil, nil
	}
	p, rel, err := rawPath(dir, job, reports.ResultsFile)
	if err != nil {
		return nil, fmt.Errorf("raw results: %w", err)
	}
	w, err := newRawWriter(p)
	if err != nil {
		return nil, fmt.Errorf("raw results: %w", err)
	}
	w.rel = rel
	return w, nil
}

// closeRaw closes w (nil: nothing to close). Its error is not the
// strategy's: a measurement says it in a note (rawWriter.note).
func closeRaw(w *rawWriter) {
	if w != nil {
		_ = w.close()
	}
}

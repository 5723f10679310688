package real

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// rawWriter encodes results in Vegeta's format on a goroutine of its own,
// so that file output never slows the loop that collects results. A write
// error (a full disk) stops the raw data, not the run: the results that
// follow are discarded, and the file, which would end mid-record, is
// removed (freeing its space for the summary). note says so.
type rawWriter struct {
	ch   chan *vegeta.Result
	done chan struct{}
	once sync.Once

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
	return newRawEncoder(rawFile{f}), nil
}

// rawFlushAt is how many bytes of encoded results are written at once.
const rawFlushAt = 32 << 10

// aborter is a destination that can be discarded rather than closed.
type aborter interface{ Abort() }

// newRawEncoder encodes results to f, closed by close; after a write
// error f is discarded instead when it can be (aborter).
func newRawEncoder(f io.WriteCloser) *rawWriter {
	w := &rawWriter{ch: make(chan *vegeta.Result, 1<<14), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		// The buffer is flushed here, every rawFlushAt bytes, and never
		// fills by itself (no record is that long), so that a write error
		// is known to lose the results since the last flush: since is the
		// send time of the first of them.
		bw := bufio.NewWriterSize(f, 4*rawFlushAt)
		enc := vegeta.NewEncoder(bw)
		var since time.Time
		fail := func(err error) { w.err, w.failedAt = err, since }
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
				if err := bw.Flush(); err != nil {
					fail(err)
				}
			}
		}
		if w.err == nil {
			if err := bw.Flush(); err != nil {
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

// add queues r; it blocks only when the encoder is 16384 results behind.
func (w *rawWriter) add(r *vegeta.Result) { w.ch <- r }

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
	what := "results-" + reports.Slug(name) + ".bin was not kept"
	if w.removed {
		what = "the partial results-" + reports.Slug(name) + ".bin was removed"
	}
	why := w.err
	var pe *fs.PathError
	if errors.As(why, &pe) {
		why = pe.Err // "no space left on device", without the temporary file's name
	}
	return fmt.Sprintf("%s: raw data stopped at %.1f s: %v; %s, and the summary covers the whole run.",
		name, w.failedAt.Sub(start).Seconds(), why, what)
}

func writeHDRLog(dir, name string, coll *engine.Collector, start, end time.Time) error {
	f, err := reports.CreateAtomic(filepath.Join(dir, "latency-"+reports.Slug(name)+".hlog"), 0o644)
	if err != nil {
		return err
	}
	if err := coll.WriteHDRLog(f, name, start, end); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// openRaw opens strategy name's raw results file in dir, or returns nil
// when dir is "" (no raw results kept).
func openRaw(dir, name string) (*rawWriter, error) {
	if dir == "" {
		return nil, nil
	}
	w, err := newRawWriter(filepath.Join(dir, "results-"+reports.Slug(name)+".bin"))
	if err != nil {
		return nil, fmt.Errorf("raw results: %w", err)
	}
	return w, nil
}

// closeRaw closes w (nil: nothing to close). Its error is not the
// strategy's: a measurement says it in a note (rawWriter.note).
func closeRaw(w *rawWriter) {
	if w != nil {
		_ = w.close()
	}
}

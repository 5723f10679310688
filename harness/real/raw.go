package real

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// rawWriter encodes results in Vegeta's format on a goroutine of its own,
// so that file output never slows the loop that collects results.
type rawWriter struct {
	ch   chan *vegeta.Result
	done chan error
}

func newRawWriter(path string) (*rawWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return newRawEncoder(f), nil
}

// newRawEncoder encodes results to f, closed by close.
func newRawEncoder(f io.WriteCloser) *rawWriter {
	w := &rawWriter{ch: make(chan *vegeta.Result, 1<<14), done: make(chan error, 1)}
	go func() {
		bw := bufio.NewWriterSize(f, 1<<20)
		enc := vegeta.NewEncoder(bw)
		var werr error
		for r := range w.ch {
			if werr == nil {
				werr = enc(r)
			}
		}
		if ferr := bw.Flush(); werr == nil {
			werr = ferr
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		w.done <- werr
	}()
	return w
}

// add queues r; it blocks only when the encoder is 16384 results behind.
func (w *rawWriter) add(r *vegeta.Result) { w.ch <- r }

// close waits until everything queued is written.
func (w *rawWriter) close() error {
	close(w.ch)
	return <-w.done
}

func writeHDRLog(dir, name string, coll *engine.Collector, start, end time.Time) error {
	f, err := os.Create(filepath.Join(dir, "latency-"+reports.Slug(name)+".hlog"))
	if err != nil {
		return err
	}
	werr := coll.WriteHDRLog(f, name, start, end)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
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

// closeRaw closes w (nil: nothing to close) and, when *err is nil, sets it
// to the error of closing.
func closeRaw(w *rawWriter, err *error) {
	if w == nil {
		return
	}
	if cerr := w.close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("raw results: %w", cerr)
	}
}

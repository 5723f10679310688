package real

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// keyTargeter gives every request the next key of keys in
// strategies.KeyHeader; *start is the attack's start, for keys that change
// over time (a hot key from some point on).
func keyTargeter(keys *engine.KeySource, start *time.Time) vegeta.Targeter {
	var next atomic.Uint64
	return func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		t.Method = http.MethodGet
		t.URL = "http://lbchaos-backend/"
		t.Body = nil
		t.Header = http.Header{strategies.KeyHeader: []string{strconv.FormatUint(keys.Key(i, time.Since(*start)), 10)}}
		return nil
	}
}

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
	return w, nil
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

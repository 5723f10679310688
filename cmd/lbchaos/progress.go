package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/harness"
)

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressPrinter renders harness progress: on a terminal one line updated
// in place every second; elsewhere (CI logs) a plain line every few seconds.
type progressPrinter struct {
	w     io.Writer
	tty   bool
	every time.Duration

	mu   sync.Mutex // log lines may come from several goroutines
	last time.Time
	live bool // a line is being updated in place
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	return &progressPrinter{w: w, tty: isTerminal(w), every: 5 * time.Second}
}

func (p *progressPrinter) line(pr harness.Progress) string {
	el := pr.Elapsed.Truncate(time.Second)
	errPct := 0.0
	if pr.Results > 0 {
		errPct = 100 * float64(pr.Errors) / float64(pr.Results)
	}
	if pr.Elapsed <= pr.Duration {
		rate := 0.0
		if s := pr.Elapsed.Seconds(); s > 0 {
			rate = float64(pr.Results+pr.InFlight) / s
		}
		return fmt.Sprintf("[%d/%d] %s  %v/%v  %.0f req/s  %d results  %.2f%% errors",
			pr.Index, pr.Total, pr.Strategy, el, pr.Duration, rate, pr.Results, errPct)
	}
	return fmt.Sprintf("[%d/%d] %s  %v: attack over, waiting for %d requests in flight  %.2f%% errors",
		pr.Index, pr.Total, pr.Strategy, el, pr.InFlight, errPct)
}

// update is harness.Options.Progress.
func (p *progressPrinter) update(pr harness.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(pr))
		p.live = true
		return
	}
	if now := time.Now(); now.Sub(p.last) >= p.every {
		p.last = now
		fmt.Fprintf(p.w, "      %s\n", p.line(pr))
	}
}

// Write passes log lines through, ending an in-place line first.
func (p *progressPrinter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		fmt.Fprint(p.w, "\r\033[K")
		p.live = false
	}
	return p.w.Write(b)
}

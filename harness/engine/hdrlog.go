package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// secondLog is the body of an HdrHistogram log (V2): for every second of
// the attack with requests, one interval tagged "all" and one per instance
// with requests, tagged "instance-N", each starting at the second's offset
// from the attack's start. Values are latencies in nanoseconds, the unit
// HdrHistogram's log tools assume (the interval's max column is in
// milliseconds); the collector's microsecond buckets are converted by
// their lowest value, within the histograms' precision of 3 significant
// digits. Seconds are encoded as they are reduced, so the log costs a few
// hundred bytes a second, not the histograms.
type secondLog struct {
	buf bytes.Buffer
	lw  *hdrhistogram.HistogramLogWriter // base time 0: interval starts are offsets
	err error                            // the first encoding error
	off bool                             // not kept (Collector.NoHDRLog)
}

// errNoHDRLog is WriteHDRLog's error on a collector told not to keep the log.
var errNoHDRLog = errors.New("histogram log: not kept (NoHDRLog)")

// NoHDRLog makes the collector skip the HdrHistogram log: WriteHDRLog
// fails instead. Encoding a second's histograms costs far more than
// recording them (a compressor per histogram), so an engine that never
// writes the log (the simulator) spares it. Call it before the first Add.
func (c *Collector) NoHDRLog() {
	c.mu.Lock()
	c.seconds.off = true
	c.mu.Unlock()
}

// nsHist is a histogram of latencies in nanoseconds with the collector's
// range and precision.
func nsHist() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(histMin*1000, histMax*1000, histDigits)
}

// add encodes second b's per-instance histograms (nil where none).
func (l *secondLog) add(b int, hists []*hdrhistogram.PackedHistogram) {
	if l.off || l.err != nil || len(hists) == 0 {
		return
	}
	if l.lw == nil {
		l.lw = hdrhistogram.NewHistogramLogWriter(&l.buf)
	}
	start, end := int64(b)*1000, int64(b+1)*1000
	all := nsHist()
	var inst []*hdrhistogram.PackedHistogram
	for _, h := range hists {
		var ns *hdrhistogram.PackedHistogram
		if h != nil && h.TotalCount() > 0 {
			ns = nsHist()
			h.ForEachBucket(func(us, n int64) bool {
				if l.err == nil {
					l.err = ns.RecordValues(us*1000, n)
				}
				return l.err == nil
			})
			all.Merge(ns)
		}
		inst = append(inst, ns)
	}
	if l.err != nil || all.TotalCount() == 0 {
		return
	}
	out := func(h *hdrhistogram.PackedHistogram, tag string) error {
		h.SetTag(tag)
		h.SetStartTimeMs(start)
		h.SetEndTimeMs(end)
		return l.lw.OutputIntervalPackedHistogram(h)
	}
	if l.err = out(all, "all"); l.err != nil {
		return
	}
	for i, h := range inst {
		if h != nil {
			if l.err = out(h, fmt.Sprintf("instance-%d", i)); l.err != nil {
				return
			}
		}
	}
}

// WriteHDRLog writes the latency histograms of the strategy name as an
// HdrHistogram log (format V2, readable by HistogramLogAnalyzer and every
// HdrHistogram library's log reader): one interval a second, by the time
// requests were sent, tagged "all" and "instance-N", values in
// nanoseconds (see secondLog). StartTime and BaseTime are start, the attack's start;
// interval timestamps are seconds from it. end bounds the attack, for the
// header comment. Call it after Finish.
func (c *Collector) WriteHDRLog(w io.Writer, name string, start, end time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seconds.off {
		return errNoHDRLog
	}
	if c.seconds.err != nil {
		return fmt.Errorf("histogram log: %w", c.seconds.err)
	}
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputComment(fmt.Sprintf("lbchaos latency histograms of %s, one interval a second of the %.1f s attack (by send time), values in nanoseconds", name, end.Sub(start).Seconds())); err != nil {
		return err
	}
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	if err := lw.OutputStartTime(start.UnixMilli()); err != nil {
		return err
	}
	if err := lw.OutputBaseTime(start.UnixMilli()); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	_, err := w.Write(c.seconds.buf.Bytes())
	return err
}

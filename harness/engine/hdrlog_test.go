package engine

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"
)

// TestWriteHDRLog writes a three-second attack on two instances as a log
// and reads it back with the library's reader: one interval a second,
// tagged "all" and per instance with requests, on absolute times from the
// attack's start, counts by send time, values in nanoseconds.
func TestWriteHDRLog(t *testing.T) {
	c := NewCollector(2, 3*time.Second, time.Second, time.Second)
	// Second 0: 3 requests to instance 0 (10 ms); second 1: 2 to instance
	// 1 (2 ms) and 1 to instance 0 (10 ms), sent at 1.9 s so it ends in
	// second 2; second 2: none.
	for _, o := range []Outcome{
		{Instance: 0, SentAt: 100 * time.Millisecond, Latency: 10 * time.Millisecond, Success: true},
		{Instance: 0, SentAt: 200 * time.Millisecond, Latency: 10 * time.Millisecond, Success: true},
		{Instance: 0, SentAt: 900 * time.Millisecond, Latency: 10 * time.Millisecond, Success: true},
		{Instance: 1, SentAt: 1100 * time.Millisecond, Latency: 2 * time.Millisecond},
		{Instance: 1, SentAt: 1200 * time.Millisecond, Latency: 2 * time.Millisecond},
		{Instance: 0, SentAt: 1900 * time.Millisecond, Latency: 10 * time.Millisecond, Success: true},
	} {
		c.Add(o)
	}
	c.Finish()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := c.WriteHDRLog(&buf, "p2c", start, start.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("log:\n%s", buf.String())
	epoch := fmt.Sprint(start.Unix())
	for _, h := range []string{"#[StartTime: " + epoch + " ", "#[BaseTime: " + epoch + " ", "#[Histogram log format version 1.3]",
		"Tag=instance-1,1.000000,1.000000,2.000895,"} { // the max column in milliseconds
		if !strings.Contains(buf.String(), h) {
			t.Errorf("log lacks %q", h)
		}
	}

	r := hdrhistogram.NewHistogramLogReader(&buf)
	var got []string
	for {
		h, err := r.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		// Nanoseconds, to 3 significant digits: 10 ms within 10 µs.
		got = append(got, fmt.Sprintf("%s %d-%d ms: %d, p50 %.2f ms",
			h.Tag(), h.StartTimeMs()-start.UnixMilli(), h.EndTimeMs()-start.UnixMilli(), h.TotalCount(), float64(h.ValueAtPercentile(50))/1e6))
	}
	want := []string{
		"all 0-1000 ms: 3, p50 10.00 ms",
		"instance-0 0-1000 ms: 3, p50 10.00 ms",
		"all 1000-2000 ms: 3, p50 2.00 ms",
		"instance-0 1000-2000 ms: 1, p50 10.00 ms",
		"instance-1 1000-2000 ms: 2, p50 2.00 ms",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("intervals (-want +got):\n%s", d)
	}
}

// TestNoHDRLog: a collector told to keep no log records as before and
// refuses to write the log it did not keep.
func TestNoHDRLog(t *testing.T) {
	c := NewCollector(2, 3*time.Second, time.Second, time.Second)
	c.NoHDRLog()
	for i := range 100 {
		c.Add(Outcome{Instance: i % 2, SentAt: time.Duration(i) * 20 * time.Millisecond, Latency: time.Duration(i) * time.Millisecond, Success: true})
	}
	c.Finish()
	if got := c.Strategy("x", nil).Requests; got != 100 {
		t.Errorf("requests = %d, want 100", got)
	}
	var buf bytes.Buffer
	if err := c.WriteHDRLog(&buf, "x", time.Unix(0, 0), time.Unix(3, 0)); err == nil {
		t.Error("WriteHDRLog of a collector without a log: no error")
	}
}

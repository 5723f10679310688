package live

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lbchaos/lbchaos/reports"
)

// overhead collects, for every answered request whose instance said how
// long it took (faultyserver.ServerTimeHeader), the client's latency minus
// that time: the transport's share (summary.json transport_overhead_ms).
// Microseconds, from 1 µs to an hour, 3 significant digits; a difference
// below 1 µs (the two clocks are read at different points) counts as 1 µs.
type overhead struct{ h *hdrhistogram.Histogram }

func newOverhead() *overhead {
	return &overhead{h: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
}

// add records one request's latency and its instance's time in µs.
func (o *overhead) add(latency time.Duration, serverUs int64) {
	d := latency.Microseconds() - serverUs
	_ = o.h.RecordValue(min(max(d, 1), o.h.HighestTrackableValue()))
}

// summary is the distribution in milliseconds, or nil when no request was
// measured.
func (o *overhead) summary() *reports.Overhead {
	if o == nil || o.h.TotalCount() == 0 {
		return nil
	}
	ms := func(p float64) float64 { return float64(o.h.ValueAtPercentile(p)) / 1000 }
	return &reports.Overhead{
		Count: o.h.TotalCount(),
		Mean:  o.h.Mean() / 1000,
		P1:    ms(1), P10: ms(10), P50: ms(50), P90: ms(90), P99: ms(99), P999: ms(99.9),
		Max:       float64(o.h.Max()) / 1000,
		Quantiles: o.quantiles(),
	}
}

// quantiles returns the distribution at every percent from 0 to 100, in
// milliseconds: p0 is the smallest value recorded, p100 the largest.
func (o *overhead) quantiles() []float64 {
	q := make([]float64, 101)
	q[0] = float64(o.h.Min()) / 1000
	for p := 1; p < 100; p++ {
		q[p] = float64(o.h.ValueAtPercentile(float64(p))) / 1000
	}
	q[100] = float64(o.h.Max()) / 1000
	return q
}

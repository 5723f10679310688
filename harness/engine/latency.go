package engine

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/reports"
)

// Histogram geometry: 1 µs to 1 h at 3 significant digits, values in µs.
const (
	histMin    = 1
	histMax    = int64(time.Hour / time.Microsecond)
	histDigits = 3
)

// newHist returns an empty dense histogram of the collector's geometry.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// newPacked returns an empty sparse histogram of the collector's geometry.
func newPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(histMin, histMax, histDigits)
}

// micros converts a latency to histogram units, clamped to the geometry.
func micros(d time.Duration) int64 {
	return min(max(d.Microseconds(), histMin), histMax)
}

// ms converts histogram units (µs) to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }

// latencyHist is what a summary reads of a histogram, dense
// (hdrhistogram.Histogram) or sparse (hdrhistogram.PackedHistogram); both
// answer alike on the same counts.
type latencyHist interface {
	TotalCount() int64
	Mean() float64
	ValueAtPercentile(float64) int64
	Max() int64
}

// latencyOf summarizes h in milliseconds; zero when h is empty.
func latencyOf(h latencyHist) reports.Latency {
	if h.TotalCount() == 0 {
		return reports.Latency{}
	}
	return reports.Latency{
		Mean: h.Mean() / 1000,
		P50:  ms(h.ValueAtPercentile(50)),
		P90:  ms(h.ValueAtPercentile(90)),
		P99:  ms(h.ValueAtPercentile(99)),
		P999: ms(h.ValueAtPercentile(99.9)),
		Max:  ms(h.Max()),
	}
}

// latencyPtr is latencyOf h, or nil when h is empty.
func latencyPtr(h latencyHist) *reports.Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	l := latencyOf(h)
	return &l
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// curvePercentiles are the points of a latency-by-percentile curve, evenly
// spaced in log(1/(1-p)) from 50 to 99.99 (eight per decade), as HdrHistogram
// plots them, and the maximum.
var curvePercentiles = func() []float64 {
	var ps []float64
	for i := 0; ; i++ {
		x := 2 * math.Pow(10, float64(i)/8) // 1/(1-p)
		if x > 10000*1.0001 {
			break
		}
		ps = append(ps, 100*(1-1/x))
	}
	return append(ps, 99.99, 100)
}()

// percentileCurve reads h at curvePercentiles, in milliseconds; nil when
// h is empty.
func percentileCurve(h *hdrhistogram.Histogram) []reports.PercentilePoint {
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([]reports.PercentilePoint, 0, len(curvePercentiles))
	for _, p := range curvePercentiles {
		if n := len(out); n > 0 && out[n-1].Percentile >= p {
			continue
		}
		v := h.ValueAtPercentile(p)
		if p == 100 {
			v = h.Max()
		}
		out = append(out, reports.PercentilePoint{Percentile: math.Round(p*1e4) / 1e4, LatencyMs: ms(v)})
	}
	return out
}

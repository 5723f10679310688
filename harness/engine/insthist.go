package engine

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// denseAbove is how many populated buckets an instance's histogram holds
// sparse before it turns dense. A sparse histogram's cost grows with its
// populated buckets (a new one shifts those above it), a dense one's does
// not but it takes 188 KB and a summary walks all of them; latencies that
// vary little (a fixed service time) stay far below this, widely spread
// ones (an exponential service time) pass it within a second or so.
const denseAbove = 256

// instHist is one of an instance's latency histograms: sparse
// (PackedHistogram) while few buckets are populated, dense (Histogram)
// from then on. Both have the same buckets and give the same summary and
// the same encoding of the same counts, so which one holds them is not
// visible outside.
type instHist struct {
	packed *hdrhistogram.PackedHistogram // nil once dense
	dense  *hdrhistogram.Histogram       // nil while sparse
}

func newInstHist() instHist { return instHist{packed: newPacked()} }

// record records n values us; us is in the histogram's range (micros).
func (h *instHist) record(us, n int64) {
	if h.dense != nil {
		_ = h.dense.RecordValues(us, n)
		return
	}
	_ = h.packed.RecordValues(us, n)
	h.densify()
}

// merge adds from's counts, returning how many were dropped.
func (h *instHist) merge(from *hdrhistogram.PackedHistogram) int64 {
	if h.dense != nil {
		return from.MergeInto(h.dense)
	}
	d := h.packed.Merge(from)
	h.densify()
	return d
}

// densify turns h dense once it has more than denseAbove buckets.
func (h *instHist) densify() {
	if h.packed.Populated() <= denseAbove {
		return
	}
	h.dense = newHist()
	h.packed.MergeInto(h.dense)
	h.packed = nil
}

// hist returns the histogram holding the counts.
func (h *instHist) hist() latencyHist {
	if h.dense != nil {
		return h.dense
	}
	return h.packed
}

// encode encodes h as encodeHist encodes a dense histogram.
func (h *instHist) encode() ([]byte, error) {
	if h.dense != nil {
		return encodeHist(h.dense)
	}
	return encodePacked(h.packed)
}

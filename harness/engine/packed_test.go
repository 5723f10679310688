package engine

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPackedInstanceHistograms: the per-instance histograms are sparse
// (PackedHistogram) while the overall ones are dense; on the same values
// both give the same summary latency, to the bit, and the same encoding in
// a generator's stream, so a summary or a stream does not depend on which
// kind holds an instance's latencies.
func TestPackedInstanceHistograms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	draws := map[string]func() int64{
		"fixed":       func() int64 { return 10000 },
		"exponential": func() int64 { return int64(rng.ExpFloat64() * 10000) },
		"wide":        func() int64 { return int64(math.Exp(rng.Float64() * math.Log(float64(histMax)))) },
		"timeouts": func() int64 {
			if rng.IntN(10) == 0 {
				return 30_000_000
			}
			return 1 + rng.Int64N(2000)
		},
	}
	for name, draw := range draws {
		for _, n := range []int{0, 1, 7, 1000, 100_000} {
			dense, packed := newHist(), newPacked()
			for range n {
				v := min(max(draw(), histMin), histMax)
				k := 1 + rng.Int64N(3)
				if err := dense.RecordValues(v, k); err != nil {
					t.Fatal(err)
				}
				if err := packed.RecordValues(v, k); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(latencyPtr(dense), latencyPtr(packed)); diff != "" {
				t.Errorf("%s, %d values: latency (-dense +packed):\n%s", name, n, diff)
			}
			if n > 0 {
				// Exact float equality, not cmp's: the summary is written
				// from these bits.
				if d, p := latencyOf(dense), latencyOf(packed); math.Float64bits(d.Mean) != math.Float64bits(p.Mean) {
					t.Errorf("%s, %d values: mean %v dense, %v packed", name, n, d.Mean, p.Mean)
				}
			}
			de, err := encodeHist(dense)
			if err != nil {
				t.Fatal(err)
			}
			pe, err := encodePacked(packed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(de, pe) {
				t.Errorf("%s, %d values: the encodings differ", name, n)
			}
		}
	}
}

package engine

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPackedInstanceHistograms: the per-instance histograms start sparse
// (PackedHistogram, in an instHist) while the overall ones are dense; on
// the same values, recorded or merged, both give the same summary latency,
// to the bit, and the same encoding in a generator's stream, so a summary
// or a stream does not depend on which kind holds an instance's latencies.
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
			dense, packed, inst, merged := newHist(), newPacked(), newInstHist(), newInstHist()
			part := newPacked()
			for range n {
				v := min(max(draw(), histMin), histMax)
				k := 1 + rng.Int64N(3)
				if err := dense.RecordValues(v, k); err != nil {
					t.Fatal(err)
				}
				if err := packed.RecordValues(v, k); err != nil {
					t.Fatal(err)
				}
				inst.record(v, k)
				_ = part.RecordValues(v, k)
				if part.TotalCount() > 500 {
					if d := merged.merge(part); d != 0 {
						t.Fatalf("%d dropped", d)
					}
					part = newPacked()
				}
			}
			merged.merge(part)
			if (inst.dense != nil) != (packed.Populated() > denseAbove) {
				t.Errorf("%s, %d values: %d buckets, dense %v", name, n, packed.Populated(), inst.dense != nil)
			}
			for kind, h := range map[string]latencyHist{"packed": packed, "instHist": inst.hist(), "merged": merged.hist()} {
				if diff := cmp.Diff(latencyPtr(dense), latencyPtr(h)); diff != "" {
					t.Errorf("%s, %d values: latency (-dense +%s):\n%s", name, n, kind, diff)
				}
				if n > 0 {
					// Exact, not cmp's float tolerance: the summary is
					// written from these bits.
					if d, p := latencyOf(dense), latencyOf(h); math.Float64bits(d.Mean) != math.Float64bits(p.Mean) {
						t.Errorf("%s, %d values: mean %v dense, %v %s", name, n, d.Mean, p.Mean, kind)
					}
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
			ie, err := inst.encode()
			if err != nil {
				t.Fatal(err)
			}
			me, err := merged.encode()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(de, pe) || !bytes.Equal(de, ie) || !bytes.Equal(de, me) {
				t.Errorf("%s, %d values: the encodings differ", name, n)
			}
		}
	}
}

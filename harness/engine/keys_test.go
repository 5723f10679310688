package engine

import (
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

func TestKeySource(t *testing.T) {
	const draws = 200000
	tests := []struct {
		name  string
		spec  experiments.KeySpec
		at    time.Duration
		check func(t *testing.T, counts map[uint64]int)
	}{
		{
			name: "sequence is the request number mod n",
			spec: experiments.KeySpec{Dist: experiments.KeysSequence, N: 100},
			check: func(t *testing.T, counts map[uint64]int) {
				for k := range uint64(100) {
					if counts[k] != draws/100 {
						t.Fatalf("key %d drawn %d times, want %d", k, counts[k], draws/100)
					}
				}
			},
		},
		{
			name: "uniform passes chi-square",
			spec: experiments.KeySpec{Dist: experiments.KeysUniform, N: 50},
			check: func(t *testing.T, counts map[uint64]int) {
				exp := float64(draws) / 50
				var chi float64
				for k := range uint64(50) {
					d := float64(counts[k]) - exp
					chi += d * d / exp
				}
				// 49 degrees of freedom, p = 0.001: 85.35.
				if chi > 85.35 || len(counts) != 50 {
					t.Errorf("chi-square %.1f over %d keys, want <= 85.35 over 50", chi, len(counts))
				}
			},
		},
		{
			name: "zipf gives key i a share of 1/(i+1)^s over the harmonic sum",
			spec: experiments.KeySpec{Dist: experiments.KeysZipf, N: 10000, S: 1.1},
			check: func(t *testing.T, counts map[uint64]int) {
				var h float64
				for i := 1; i <= 10000; i++ {
					h += math.Pow(float64(i), -1.1)
				}
				for _, k := range []uint64{0, 1, 9} {
					want := math.Pow(float64(k+1), -1.1) / h
					got := float64(counts[k]) / draws
					if math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/draws) {
						t.Errorf("key %d share %.4f, want %.4f", k, got, want)
					}
				}
			},
		},
		{
			name: "the hot key is not hot before its time",
			spec: experiments.KeySpec{Dist: experiments.KeysUniform, N: 1000, HotKey: 4242, HotShare: 0.3, HotFrom: 15 * time.Second},
			at:   14 * time.Second,
			check: func(t *testing.T, counts map[uint64]int) {
				if counts[4242] != 0 {
					t.Errorf("hot key drawn %d times before from", counts[4242])
				}
			},
		},
		{
			name: "the hot key takes its share from its time",
			spec: experiments.KeySpec{Dist: experiments.KeysUniform, N: 1000, HotKey: 4242, HotShare: 0.3, HotFrom: 15 * time.Second},
			at:   15 * time.Second,
			check: func(t *testing.T, counts map[uint64]int) {
				if got := float64(counts[4242]) / draws; math.Abs(got-0.3) > 0.005 {
					t.Errorf("hot key share %.4f, want 0.3", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := NewKeySource(&tt.spec, 1)
			counts := map[uint64]int{}
			for i := range uint64(draws) {
				counts[ks.Key(i, tt.at)]++
			}
			tt.check(t, counts)
			// The same seed and index give the same key.
			again := NewKeySource(&tt.spec, 1)
			for i := range uint64(100) {
				if ks.Key(i, tt.at) != again.Key(i, tt.at) {
					t.Fatalf("key %d differs between two sources with one seed", i)
				}
			}
		})
	}
	if NewKeySource(nil, 1) != nil {
		t.Error("a nil spec gave a key source")
	}
}

package strategies

import (
	"slices"
	"testing"
)

// chiSquare returns Pearson's statistic of counts against equal expected
// shares.
func chiSquare(counts []int, total int) float64 {
	want := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		d := float64(c) - want
		x += d * d / want
	}
	return x
}

func TestRandomUniform(t *testing.T) {
	tests := []struct {
		name  string
		hosts []int
		// chi-square critical value at p = 0.001 for len(hosts)-1 degrees
		// of freedom; with a fixed seed the test is deterministic.
		critical float64
	}{
		{"ten hosts", seq(10), 27.88},
		{"subset", []int{3, 5, 9}, 13.82},
		{"two hosts", []int{0, 7}, 10.83},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &random{rand: newRand(42)}
			const picks = 100_000
			counts := make([]int, len(tt.hosts))
			for range picks {
				ep, done := p.Pick(Request{}, tt.hosts)
				done(Outcome{})
				i := slices.Index(tt.hosts, ep)
				if i < 0 {
					t.Fatalf("picked %d, not among %v", ep, tt.hosts)
				}
				counts[i]++
			}
			if x := chiSquare(counts, picks); x > tt.critical {
				t.Errorf("counts %v: chi-square %.1f > %.2f", counts, x, tt.critical)
			}
		})
	}
}

func TestRandomSingleHost(t *testing.T) {
	p := &random{rand: newRand(1)}
	for range 10 {
		if ep, _ := p.Pick(Request{}, []int{6}); ep != 6 {
			t.Fatalf("picked %d from [6]", ep)
		}
	}
}

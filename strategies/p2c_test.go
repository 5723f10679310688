package strategies

import (
	"slices"
	"testing"
)

func TestP2CDrawsDistinctHosts(t *testing.T) {
	// A host more loaded than every other is picked only if it is drawn
	// twice in one pick.
	for n := 2; n <= 6; n++ {
		for loaded := range n {
			inflight := make([]int64, n)
			inflight[loaded] = 100
			p := &p2c{rand: newRand(uint64(n*10 + loaded)), inflight: inflight}
			for order, hosts := range hostOrders(seq(n)) {
				for range 2000 {
					if ep, _ := p.Pick(Request{}, hosts); ep == loaded {
						t.Fatalf("n=%d, %s: picked the most loaded host %d; the two draws were the same host", n, order, loaded)
					}
				}
			}
		}
	}
}

func TestP2CSingleHost(t *testing.T) {
	p := &p2c{rand: newRand(1), inflight: make([]int64, 5)}
	for range 10 {
		if ep, _ := p.Pick(Request{}, []int{3}); ep != 3 {
			t.Fatalf("picked %d from [3]", ep)
		}
	}
}

func TestP2CShares(t *testing.T) {
	// With distinct loads, the host of rank r (0 = least loaded) among n
	// wins when drawn with one of the n-1-r more loaded hosts: probability
	// 2(n-1-r) / (n(n-1)). With equal loads the coin makes picks uniform.
	tests := []struct {
		name     string
		inflight []int64 // by endpoint id
		want     []float64
	}{
		{"ascending load", []int64{0, 1, 2, 3, 4}, []float64{0.4, 0.3, 0.2, 0.1, 0}},
		{"descending load", []int64{4, 3, 2, 1, 0}, []float64{0, 0.1, 0.2, 0.3, 0.4}},
		{"shuffled load", []int64{2, 4, 0, 3, 1}, []float64{0.2, 0, 0.4, 0.1, 0.3}},
		{"equal load", []int64{1, 1, 1, 1}, []float64{0.25, 0.25, 0.25, 0.25}},
		{"two hosts tied", []int64{0, 0}, []float64{0.5, 0.5}},
	}
	for _, tt := range tests {
		for order, hosts := range hostOrders(seq(len(tt.inflight))) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				p := &p2c{rand: newRand(5), inflight: tt.inflight}
				const picks = 100_000
				counts := make([]int, len(tt.inflight))
				for range picks {
					ep, done := p.Pick(Request{}, hosts)
					done(Outcome{Status: 200})
					counts[ep]++
				}
				var x float64
				df := -1
				for ep, share := range tt.want {
					if share == 0 {
						if counts[ep] != 0 {
							t.Errorf("endpoint %d (most loaded) picked %d times", ep, counts[ep])
						}
						continue
					}
					exp := share * picks
					d := float64(counts[ep]) - exp
					x += d * d / exp
					df++
				}
				if x > chiCritical[df] {
					t.Errorf("counts %v, want shares %v: chi-square %.1f > %.2f", counts, tt.want, x, chiCritical[df])
				}
			})
		}
	}
}

func TestP2CPrefersIdleThroughBalancer(t *testing.T) {
	b, err := New("p2c", Env{N: 2, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	// With two endpoints both are drawn every time, so held requests
	// alternate between them.
	var dones []func(Outcome)
	for i := range 10 {
		_, done := b.Pick(Request{})
		dones = append(dones, done)
		if got := b.InFlight(); max(got[0], got[1])-min(got[0], got[1]) > 1 {
			t.Fatalf("pick %d: InFlight() = %v, want balanced", i, got)
		}
	}
	for _, done := range dones {
		done(Outcome{Status: 200})
	}
	if got := b.InFlight(); !slices.Equal(got, []int64{0, 0}) {
		t.Errorf("InFlight() = %v, want zeros", got)
	}
}

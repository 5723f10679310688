package strategies

import (
	"slices"
	"testing"
)

// hostOrders returns hosts ascending, descending and in a seeded shuffle.
func hostOrders(hosts []int) map[string][]int {
	asc := slices.Sorted(slices.Values(hosts))
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	shuffled := slices.Clone(asc)
	newRand(99).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	return map[string][]int{"ascending": asc, "descending": desc, "shuffled": shuffled}
}

// chiCritical holds chi-square critical values at p = 0.001 by degrees of
// freedom.
var chiCritical = []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52}

func TestLeastInflight(t *testing.T) {
	tests := []struct {
		name     string
		inflight []int64 // by endpoint id
		hosts    []int   // nil: every endpoint
		want     []int   // the hosts with the fewest in flight
	}{
		{"ascending load, min first", []int64{0, 1, 2, 3, 4, 5}, nil, []int{0}},
		{"descending load, min last", []int64{5, 4, 3, 2, 1, 0}, nil, []int{5}},
		{"min in the middle", []int64{3, 1, 0, 2, 4}, nil, []int{2}},
		{"shuffled load with ties", []int64{2, 0, 3, 0, 0, 5, 0}, nil, []int{1, 3, 4, 6}},
		{"ties at both ends", []int64{1, 4, 4, 1}, nil, []int{0, 3}},
		{"higher tie before lower min", []int64{2, 2, 1, 3, 1}, nil, []int{2, 4}},
		{"all equal", []int64{7, 7, 7, 7, 7}, nil, []int{0, 1, 2, 3, 4}},
		{"single host", []int64{9}, nil, []int{0}},
		{"subset without the global min", []int64{0, 5, 1, 1}, []int{1, 2, 3}, []int{2, 3}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(len(tt.inflight))
		}
		for order, hosts := range hostOrders(hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				p := &leastInflight{rand: newRand(7), inflight: tt.inflight}
				picks := 10_000 * len(tt.want)
				counts := make([]int, len(tt.want))
				for range picks {
					ep, done := p.Pick(Request{}, hosts)
					done(Outcome{Status: 200})
					i := slices.Index(tt.want, ep)
					if i < 0 {
						t.Fatalf("hosts %v, in flight %v: picked %d, want one of %v", hosts, tt.inflight, ep, tt.want)
					}
					counts[i]++
				}
				if df := len(tt.want) - 1; df > 0 {
					if x := chiSquare(counts, picks); x > chiCritical[df] {
						t.Errorf("ties %v picked %v times: chi-square %.1f > %.2f", tt.want, counts, x, chiCritical[df])
					}
				}
			})
		}
	}
}

func TestLeastInflightThroughBalancer(t *testing.T) {
	b, err := New("least-inflight", Env{N: 4, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	// Holding every request open, picks must fill the endpoints evenly.
	var dones []func(Outcome)
	for round := 1; round <= 3; round++ {
		for range 4 {
			_, done := b.Pick(Request{})
			dones = append(dones, done)
		}
		want := []int64{int64(round), int64(round), int64(round), int64(round)}
		if got := b.InFlight(); !slices.Equal(got, want) {
			t.Fatalf("round %d: InFlight() = %v, want %v", round, got, want)
		}
	}
	for _, done := range dones {
		done(Outcome{Status: 200})
	}
}

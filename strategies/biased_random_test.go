package strategies

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// wtBiasedShares returns the probabilities of biased-random for the given
// loads: proportional to (1 - load/max)^2, uniform when that is 0 for all.
func wtBiasedShares(loads []int64) []float64 {
	maxLoad := slices.Max(loads)
	shares := make([]float64, len(loads))
	var total float64
	for i, l := range loads {
		if maxLoad > 0 {
			b := 1 - float64(l)/float64(maxLoad)
			shares[i] = b * b
		}
		total += shares[i]
	}
	for i := range shares {
		if total == 0 {
			shares[i] = 1 / float64(len(loads))
		} else {
			shares[i] /= total
		}
	}
	return shares
}

func TestBiasedRandomShares(t *testing.T) {
	tests := []struct {
		name     string
		inflight []int64 // by endpoint id
		hosts    []int   // nil: every endpoint
		want     []float64
	}{
		{"no load is uniform", []int64{0, 0, 0, 0}, nil, []float64{0.25, 0.25, 0.25, 0.25}},
		{"all at max load is uniform", []int64{3, 3, 3}, nil, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"squared bias", []int64{0, 1, 2, 4}, nil, []float64{16.0 / 29, 9.0 / 29, 4.0 / 29, 0}},
		{"squared bias, loads shuffled", []int64{4, 2, 0, 1}, nil, []float64{0, 4.0 / 29, 16.0 / 29, 9.0 / 29}},
		{"loads 1 2 3", []int64{1, 2, 3}, nil, []float64{4.0 / 5, 1.0 / 5, 0}},
		{"ties at the max get nothing", []int64{2, 0, 2}, nil, []float64{0, 1, 0}},
		{"ties below the max share", []int64{1, 1, 3, 0}, nil, []float64{4.0 / 17, 4.0 / 17, 0, 9.0 / 17}},
		{"max over the given hosts only", []int64{9, 0, 4, 2, 8, 1}, []int{2, 3, 5}, []float64{0, 0, 0, 4.0 / 13, 0, 9.0 / 13}},
		{"large loads scaled down", []int64{0, 1 << 30, 1 << 31}, nil, []float64{0.8, 0.2, 0}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(len(tt.inflight))
			if diff := slicesMaxAbsDiff(wtBiasedShares(tt.inflight), tt.want); diff > 1e-12 {
				t.Fatalf("%s: the formula gives %v, the table %v", tt.name, wtBiasedShares(tt.inflight), tt.want)
			}
		}
		for order, ordered := range hostOrders(hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				p := &biasedRandom{rand: newRand(17), inflight: tt.inflight}
				counts := make([]int, len(tt.inflight))
				for range 100_000 {
					ep, done := p.Pick(Request{}, ordered)
					done(ok200)
					counts[ep]++
				}
				wtCheckShares(t, counts, tt.want, wtCritical001)
			})
		}
	}
}

func slicesMaxAbsDiff(a, b []float64) float64 {
	var d float64
	for i := range a {
		d = max(d, a[i]-b[i], b[i]-a[i])
	}
	return d
}

func TestBiasedRandomEveryOrder(t *testing.T) {
	// Loads {0, 1, 2, 4} and {0, 2, 2, 3} in all 24 orders, on the hosts in
	// three orders.
	for _, base := range [][]int64{{0, 1, 2, 4}, {0, 2, 2, 3}} {
		for _, inflight := range wtPermutations(base) {
			want := wtBiasedShares(inflight)
			for order, hosts := range hostOrders(seq(4)) {
				t.Run(fmt.Sprintf("loads=%v/%s", inflight, order), func(t *testing.T) {
					p := &biasedRandom{rand: newRand(23), inflight: inflight}
					counts := make([]int, 4)
					for range 20_000 {
						ep, _ := p.Pick(Request{}, hosts)
						counts[ep]++
					}
					wtCheckShares(t, counts, want, wtCritical1e6)
				})
			}
		}
	}
}

func TestBiasedRandomLocate(t *testing.T) {
	// Loads {0, 1, 2, 4}: (max - load)^2 = 16, 9, 4, 0 take [0,16), [16,25),
	// [25,29) and nothing, in the order of hosts.
	inflight := []int64{0, 1, 2, 4}
	tests := []struct {
		hosts []int
		u     uint64
		want  int
	}{
		{[]int{0, 1, 2, 3}, 0, 0},
		{[]int{0, 1, 2, 3}, 15, 0},
		{[]int{0, 1, 2, 3}, 16, 1},
		{[]int{0, 1, 2, 3}, 24, 1},
		{[]int{0, 1, 2, 3}, 25, 2},
		{[]int{0, 1, 2, 3}, 28, 2},
		{[]int{3, 2, 1, 0}, 0, 2},
		{[]int{3, 2, 1, 0}, 3, 2},
		{[]int{3, 2, 1, 0}, 4, 1},
		{[]int{3, 2, 1, 0}, 13, 0},
		{[]int{3, 2, 1, 0}, 28, 0},
	}
	p := &biasedRandom{rand: newRand(1), inflight: inflight}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("hosts=%v/u=%d", tt.hosts, tt.u), func(t *testing.T) {
			if got := p.locate(tt.hosts, 4, 0, tt.u); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBiasedRandomOneDrawPerPick(t *testing.T) {
	for _, tt := range []struct {
		name     string
		inflight []int64
	}{
		{"no load", []int64{0, 0, 0, 0, 0}},
		{"all at max", []int64{2, 2, 2, 2, 2}},
		{"biased", []int64{0, 4, 1, 7, 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &wtCountingSource{src: rand.NewPCG(5, 6)}
			p := &biasedRandom{rand: rand.New(src), inflight: tt.inflight}
			for i := range 1000 {
				before := src.draws
				p.Pick(Request{}, seq(5))
				if d := src.draws - before; d != 1 {
					t.Fatalf("pick %d drew %d numbers, want 1", i, d)
				}
			}
		})
	}
}

func TestBiasedRandomThroughBalancer(t *testing.T) {
	// Requests held open: the first pick of a round is uniform, after which
	// the hosts still at the round's lower load are the only candidates, so
	// every round of three picks visits each endpoint once.
	b, err := New("biased-random", Env{N: 3, Rand: newRand(4), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	held := make([][]func(Outcome), 3) // by endpoint
	pick := func() int {
		ep, done := b.Pick(Request{})
		held[ep] = append(held[ep], done)
		return ep
	}
	for round := int64(1); round <= 20; round++ {
		picked := []int{pick(), pick(), pick()}
		if slices.Sort(picked); !slices.Equal(picked, []int{0, 1, 2}) {
			t.Fatalf("round %d picked %v, want each endpoint once", round, picked)
		}
		if got, want := b.InFlight(), []int64{round, round, round}; !slices.Equal(got, want) {
			t.Fatalf("round %d: InFlight() = %v, want %v", round, got, want)
		}
	}
	// Endpoint 2 finishes half of its 20 requests: its load 10 against the
	// max 20 gives it bias 1/4 against 0 for the others, so it gets every
	// pick until it is back at 20 and the loads are equal again.
	for _, done := range held[2][:10] {
		done(ok200)
	}
	held[2] = held[2][10:]
	for i := range 10 {
		if ep := pick(); ep != 2 {
			t.Fatalf("pick %d after endpoint 2 finished half: picked %d; in flight %v", i, ep, b.InFlight())
		}
	}
	if got, want := b.InFlight(), []int64{20, 20, 20}; !slices.Equal(got, want) {
		t.Fatalf("InFlight() = %v, want %v", got, want)
	}
	for _, dones := range held {
		for _, done := range dones {
			done(ok200)
		}
	}
	if got := b.InFlight(); !slices.Equal(got, []int64{0, 0, 0}) {
		t.Errorf("InFlight() after every done = %v, want zeros", got)
	}
}

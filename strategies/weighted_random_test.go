package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestWeightedRandomShares(t *testing.T) {
	tests := []struct {
		name    string
		weights []float64 // by endpoint id
		hosts   []int     // nil: every endpoint
	}{
		{"integer weights", []float64{1, 2, 3, 4}, nil},
		{"float weights", []float64{0.5, 1.5, 3.25}, nil},
		{"one heavy host", []float64{1, 1, 8, 1, 1}, nil},
		{"one light host", []float64{200, 200, 1}, nil},
		{"subset", []float64{9, 1, 9, 2, 3, 9}, []int{1, 3, 4}},
		{"equal weights", []float64{3, 3, 3, 3, 3}, nil},
		{"equal weights within the subset", []float64{1, 2, 2, 5}, []int{1, 2}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(len(tt.weights))
		}
		var total float64
		for _, h := range hosts {
			total += tt.weights[h]
		}
		want := make([]float64, len(hosts))
		for i, h := range hosts {
			want[i] = tt.weights[h] / total
		}
		for order, ordered := range hostOrders(hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				w := &weightedRandom{rand: newRand(11), weights: tt.weights}
				const picks = 100_000
				counts := make([]int, len(hosts))
				for range picks {
					ep, done := feedPick(w, Request{}, ordered)
					done(ok200)
					i := slices.Index(hosts, ep)
					if i < 0 {
						t.Fatalf("picked %d, not among %v", ep, hosts)
					}
					counts[i]++
				}
				wtCheckShares(t, counts, want, wtCritical001)
			})
		}
	}
}

func TestWeightedRandomEveryOrder(t *testing.T) {
	// Weights {1, 2, 3, 6} on the hosts in all 24 orders, and the weights
	// moved to other endpoints.
	base := []float64{1, 2, 3, 6}
	for wi, weights := range wtPermutations(base) {
		if wi%5 != 0 {
			continue // every fifth assignment of the weights: 0, 5, 10, 15, 20
		}
		want := make([]float64, len(weights))
		for i, w := range weights {
			want[i] = w / 12
		}
		for _, hosts := range wtPermutations(seq(4)) {
			t.Run(fmt.Sprintf("weights=%v/hosts=%v", weights, hosts), func(t *testing.T) {
				w := &weightedRandom{rand: newRand(uint64(wi) + 100), weights: weights}
				counts := make([]int, 4)
				for range 24_000 {
					ep, _ := feedPick(w, Request{}, hosts)
					counts[ep]++
				}
				wtCheckShares(t, counts, want, wtCritical1e6)
			})
		}
	}
}

func TestWeightedRandomLocate(t *testing.T) {
	// Weights {1, 1, 2} take [0,1), [1,2) and [2,4) of the total 4 in the
	// order given; in reverse order 2 takes [0,2), 1 [2,3) and 0 [3,4).
	weights := []float64{1, 1, 2}
	below4 := math.Nextafter(4, 0)
	tests := []struct {
		name  string
		hosts []int
		u     float64
		want  int
	}{
		{"zero", []int{0, 1, 2}, 0, 0},
		{"inside the first", []int{0, 1, 2}, 0.5, 0},
		{"boundary belongs to the next", []int{0, 1, 2}, 1, 1},
		{"just below a boundary", []int{0, 1, 2}, math.Nextafter(2, 0), 1},
		{"second boundary", []int{0, 1, 2}, 2, 2},
		{"just below the total", []int{0, 1, 2}, below4, 2},
		{"rounded up to the total", []int{0, 1, 2}, 4, 2},
		{"reversed zero", []int{2, 1, 0}, 0, 2},
		{"reversed boundary", []int{2, 1, 0}, 2, 1},
		{"reversed last", []int{2, 1, 0}, 3, 0},
		{"reversed just below the total", []int{2, 1, 0}, below4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &weightedRandom{rand: newRand(1), weights: weights}
			w.UpdateHosts(tt.hosts)
			if got := tt.hosts[w.locate(tt.u)]; got != tt.want {
				t.Errorf("hosts %v (running sums %v), u=%v: got %d, want %d", tt.hosts, w.cum, tt.u, got, tt.want)
			}
		})
	}
}

func TestWeightedRandomTableFollowsHosts(t *testing.T) {
	// The table follows the host set through its changes, including a
	// return to an earlier set.
	weights := []float64{1, 2, 3, 2}
	all := []int{0, 1, 2, 3}
	steps := []struct {
		name  string
		hosts []int
		equal bool
		cum   []float64 // when not equal
	}{
		{"all", all, false, []float64{1, 3, 6, 8}},
		{"without 2", []int{0, 1, 3}, false, []float64{1, 3, 5}},
		{"equal weights left", []int{1, 3}, true, nil},
		{"back to the first set", all, false, []float64{1, 3, 6, 8}},
		{"reversed", []int{3, 2, 1, 0}, false, []float64{2, 5, 7, 8}},
		{"single host", []int{2}, true, nil},
	}
	w := &weightedRandom{rand: newRand(3), weights: weights}
	for _, s := range steps {
		ep, done := feedPick(w, Request{}, s.hosts)
		done(ok200)
		if !slices.Contains(s.hosts, ep) {
			t.Fatalf("%s: picked %d, not among %v", s.name, ep, s.hosts)
		}
		if w.equal != s.equal || !s.equal && !slices.Equal(w.cum, s.cum) {
			t.Fatalf("%s: equal=%v running sums %v, want equal=%v %v", s.name, w.equal, w.cum, s.equal, s.cum)
		}
	}
}

func TestWeightedRandomOneDrawPerPick(t *testing.T) {
	for _, tt := range []struct {
		name    string
		weights []float64
	}{{"unequal", []float64{1, 2, 3, 4, 5}}, {"equal", []float64{2, 2, 2, 2, 2}}} {
		t.Run(tt.name, func(t *testing.T) {
			src := &wtCountingSource{src: rand.NewPCG(1, 2)}
			b, err := New("weighted-random", Env{N: 5, Rand: rand.New(src), Weights: tt.weights})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 1000 {
				before := src.draws
				_, done := b.Pick(Request{})
				done(ok200)
				if d := src.draws - before; d != 1 {
					t.Fatalf("pick %d drew %d numbers, want 1", i, d)
				}
			}
		})
	}
}

func TestWeightedRandomThroughBalancer(t *testing.T) {
	b, err := New("weighted-random", Env{N: 4, Rand: newRand(8), Clock: newFakeClock(), Weights: []float64{1, 3, 6, 10}})
	if err != nil {
		t.Fatal(err)
	}
	count := func(hosts []int, want []float64) {
		t.Helper()
		counts := make([]int, 4)
		for range 50_000 {
			ep, done := b.Pick(Request{})
			if !slices.Contains(hosts, ep) {
				t.Fatalf("picked %d, not among %v", ep, hosts)
			}
			counts[ep]++
			done(ok200)
		}
		wtCheckShares(t, counts, want, wtCritical001)
	}
	count(seq(4), []float64{0.05, 0.15, 0.3, 0.5})
	if err := b.SetHosts([]int{3, 0, 1}); err != nil {
		t.Fatal(err)
	}
	count([]int{0, 1, 3}, []float64{1.0 / 14, 3.0 / 14, 0, 10.0 / 14})
	if err := b.SetHosts([]int{2}); err != nil {
		t.Fatal(err)
	}
	count([]int{2}, []float64{0, 0, 1, 0})
}

func TestWeightedPickAllocations(t *testing.T) {
	// Beyond the Balancer's own (the pending call and its done), a pick
	// allocates nothing once the host set has been seen.
	base, err := New("round-robin", Env{N: 100, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	balancerAllocs := testing.AllocsPerRun(1000, func() {
		_, done := base.Pick(Request{})
		done(ok200)
	})
	specs := []string{"weighted-round-robin", "weighted-random", "least-request", "least-request(full_scan=true)", "least-request(active_request_bias=0.5)", "biased-random"}
	for _, spec := range specs {
		for _, weighted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/weighted=%v", spec, weighted), func(t *testing.T) {
				env := Env{N: 100, Rand: newRand(1)}
				if weighted {
					env.Weights = make([]float64, 100)
					for i := range env.Weights {
						env.Weights[i] = float64(i%7) + 0.5
					}
				}
				b, err := New(spec, env)
				if err != nil {
					t.Fatal(err)
				}
				// Requests held on a few endpoints give biased-random and
				// least-request loads to compare.
				for range 10 {
					b.Pick(Request{})
				}
				allocs := testing.AllocsPerRun(1000, func() {
					_, done := b.Pick(Request{})
					done(ok200)
				})
				if allocs > balancerAllocs {
					t.Errorf("Pick+done: %v allocations, want at most the Balancer's %v", allocs, balancerAllocs)
				}
			})
		}
	}
}

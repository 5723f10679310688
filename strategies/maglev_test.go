package strategies

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestIsPrime(t *testing.T) {
	var primes []int
	for n := -3; n <= 50; n++ {
		if isPrime(n) {
			primes = append(primes, n)
		}
	}
	if want := []int{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47}; !slices.Equal(primes, want) {
		t.Errorf("primes up to 50: %v, want %v", primes, want)
	}
	for _, tt := range []struct {
		n    int
		want bool
	}{{65537, true}, {65536, false}, {5000011, true}, {1009, true}, {1009 * 1013, false}, {65521 * 65521, false}} {
		if got := isPrime(tt.n); got != tt.want {
			t.Errorf("isPrime(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// maglevFill fills a table of size m from hosts with the given offsets,
// skips and weights ratios, by maglevBuilder's rounds.
func maglevFill(m uint64, hosts []maglevHost) []int32 {
	b := maglevBuilder{hosts: hosts}
	return b.populate(nil, m)
}

func TestMaglevPopulate(t *testing.T) {
	tests := []struct {
		name  string
		m     uint64
		hosts []maglevHost
		want  []int32
	}{
		{
			// The example of the Maglev paper (Eisenbud et al. 2016, table
			// 1): permutations B0 = 3 0 4 1 5 2 6, B1 = 0 2 4 6 1 3 5,
			// B2 = 3 4 5 6 0 1 2 give the table B1 B0 B1 B0 B2 B2 B0.
			name: "paper example", m: 7,
			hosts: []maglevHost{{id: 0, pos: 3, skip: 4, ratio: 1}, {id: 1, pos: 0, skip: 2, ratio: 1}, {id: 2, pos: 3, skip: 1, ratio: 1}},
			want:  []int32{1, 0, 1, 0, 2, 2, 0},
		},
		{
			// B1 has half B0's weight and fills when round/2 reaches the
			// entries it has: rounds 1: B0→3, B1→0; 2: B0→4 (0 is taken),
			// B1→2; 3: B0→1; 4: B0→5, B1→6 (4 is taken) and the table is
			// full.
			name: "half weight fills every other round", m: 7,
			hosts: []maglevHost{{id: 0, pos: 3, skip: 4, ratio: 1}, {id: 1, pos: 0, skip: 2, ratio: 0.5}},
			want:  []int32{1, 0, 1, 0, 0, 0, 1},
		},
		{
			// Weights 3:1 on 13 entries: B1 fills in rounds 1, 3, 6, 9, ...
			// (when round/3 reaches its entries). B0 = 0 1 2 ...,
			// B1 = 5 7 9 11 0 2 ...: rounds 1: B0→0, B1→5; 2: B0→1;
			// 3: B0→2, B1→7; 4: B0→3; 5: B0→4; 6: B0→6 (5 is taken),
			// B1→9; 7: B0→8; 8: B0→10; 9: B0→11, B1→12 (11, 0, 2, 4, 6,
			// 8, 10 are taken) and the table is full.
			name: "third weight", m: 13,
			hosts: []maglevHost{{id: 0, pos: 0, skip: 1, ratio: 1}, {id: 1, pos: 5, skip: 2, ratio: 1.0 / 3}},
			want:  []int32{0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1},
		},
		{
			name: "single host takes everything", m: 5,
			hosts: []maglevHost{{id: 9, pos: 2, skip: 3, ratio: 1}},
			want:  []int32{9, 9, 9, 9, 9},
		},
		{
			// More hosts than entries: the later hosts get none.
			name: "more hosts than entries", m: 2,
			hosts: []maglevHost{{id: 4, pos: 1, skip: 1, ratio: 1}, {id: 5, pos: 1, skip: 1, ratio: 1}, {id: 6, pos: 0, skip: 1, ratio: 1}},
			want:  []int32{5, 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maglevFill(tt.m, tt.hosts); !slices.Equal(got, tt.want) {
				t.Errorf("table = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMaglevPermutationsFromNames(t *testing.T) {
	// offset = xxHash64(name, seed 0) mod M, skip = xxHash64(name, seed 1)
	// mod (M-1) + 1, as Envoy computes them.
	var b maglevBuilder
	b.prepare(101, []int{3, 8}, []float64{1, 1, 1, 2, 1, 1, 1, 1, 4})
	if len(b.hosts) != 2 {
		t.Fatalf("%d hosts prepared, want 2", len(b.hosts))
	}
	for i, id := range []int{3, 8} {
		h := b.hosts[i]
		name := fmt.Appendf(nil, "endpoint-%d", id)
		if h.id != int32(id) || h.pos != xxhashSeeded(name, 0)%101 || h.skip != xxhashSeeded(name, 1)%100+1 {
			t.Errorf("host %d: %+v, want offset %d skip %d", id, h, xxhashSeeded(name, 0)%101, xxhashSeeded(name, 1)%100+1)
		}
	}
	if b.hosts[0].ratio != 0.5 || b.hosts[1].ratio != 1 {
		t.Errorf("ratios %v, %v; want 0.5 and 1 (weights 2 and 4)", b.hosts[0].ratio, b.hosts[1].ratio)
	}
}

func TestMaglevTableShares(t *testing.T) {
	tests := []struct {
		name    string
		m       uint64
		ids     []int
		weights []float64 // by id; nil: all 1
		tol     float64   // relative tolerance on each host's entries
	}{
		{"ten equal hosts", 65537, seq(10), nil, 0.01},
		{"three equal hosts of twenty", 65537, []int{2, 11, 19}, nil, 0.01},
		{"1000 equal hosts", 65537, seq(1000), nil, 0.01},
		{"small table", 1009, seq(7), nil, 0.01},
		{"weights 1:2:3:4", 65537, seq(4), []float64{1, 2, 3, 4}, 0.01},
		{"weights 5:1:1", 65537, seq(3), []float64{5, 1, 1}, 0.01},
		{"fractional weights", 65537, seq(5), []float64{0.3, 1.7, 1, 2.5, 0.5}, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := hashEnv(slices.Max(tt.ids)+1, tt.weights)
			var b maglevBuilder
			table := b.fill(nil, tt.m, tt.ids, env.weights)
			counts := map[int32]int{}
			for _, ep := range table {
				counts[ep]++
			}
			var total float64
			for _, id := range tt.ids {
				total += env.weights[id]
			}
			sum := 0
			for _, id := range tt.ids {
				want := float64(tt.m) * env.weights[id] / total
				got := counts[int32(id)]
				sum += got
				if math.Abs(float64(got)-want) > tt.tol*want {
					t.Errorf("host %d has %d entries, want %.1f ± %.0f%%", id, got, want, 100*tt.tol)
				}
			}
			if sum != int(tt.m) {
				t.Errorf("hosts hold %d entries of %d (entries %v)", sum, tt.m, counts)
			}
			if tt.weights == nil {
				lo, hi := math.MaxInt, 0
				for _, c := range counts {
					lo, hi = min(lo, c), max(hi, c)
				}
				if hi-lo > 1 {
					t.Errorf("equal weights: entries range from %d to %d, want a difference of at most 1", lo, hi)
				}
			}
		})
	}
}

func TestMaglevPickReadsTable(t *testing.T) {
	env := hashEnv(8, nil)
	p := hashPicker(t, "maglev(table=1009)", env).(*maglev)
	hosts := []int{0, 2, 5, 7}
	for _, k := range hashKeys(2000, 4) {
		ep := hashPick(p, k, hosts)
		if want := int(p.table[hashKey(k)%1009]); ep != want {
			t.Fatalf("key %d: picked %d, table entry says %d", k, ep, want)
		}
	}
}

func TestMaglevRebuildsOnHostChange(t *testing.T) {
	// A scripted sequence of host sets: the table is rebuilt only when the
	// set changes and always holds exactly the current hosts.
	env := hashEnv(6, nil)
	p := hashPicker(t, "maglev(table=101)", env).(*maglev)
	a := []int{0, 1, 2, 3, 4, 5}
	steps := []struct {
		name    string
		hosts   []int
		rebuilt bool
	}{
		{"first pick builds", a, true},
		{"same hosts", a, false},
		{"same set in another order", []int{5, 4, 3, 2, 1, 0}, false},
		{"host 3 gone", []int{0, 1, 2, 4, 5}, true},
		{"only host 4", []int{4}, true},
		{"all back", seq(6), true},
	}
	var prev []int32
	for _, st := range steps {
		hashPick(p, 1, st.hosts)
		changed := !slices.Equal(prev, p.table)
		if prev != nil && st.rebuilt != changed {
			t.Errorf("%s: table changed = %v, want %v", st.name, changed, st.rebuilt)
		}
		in := map[int]bool{}
		for _, ep := range p.table {
			in[int(ep)] = true
		}
		want := map[int]bool{}
		for _, h := range st.hosts {
			want[h] = true
		}
		if len(in) != len(want) {
			t.Errorf("%s: table holds %v, want %v", st.name, in, want)
		}
		for h := range want {
			if !in[h] {
				t.Errorf("%s: host %d has no entry", st.name, h)
			}
		}
		prev = slices.Clone(p.table)
	}
}

func TestMaglevWeightedKeyShares(t *testing.T) {
	// Through a Balancer with weights 1:2:3:4, keys land in proportion.
	b, err := New("maglev", Env{N: 4, Rand: newRand(1), Weights: []float64{1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	const picks = 100_000
	counts := make([]int, 4)
	for _, k := range hashKeys(picks, 6) {
		ep, done := b.Pick(Request{Key: k, HasKey: true})
		done(ok200)
		counts[ep]++
	}
	for ep, c := range counts {
		want := picks * float64(ep+1) / 10
		if math.Abs(float64(c)-want) > 0.03*want {
			t.Errorf("endpoint %d (weight %d) got %d of %d keys, want %.0f ± 3%%", ep, ep+1, c, picks, want)
		}
	}
}

func BenchmarkMaglevBuild(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ids := seq(n)
			weights := hashEnv(n, nil).weights
			var mb maglevBuilder
			var table []int32
			b.ReportAllocs()
			for b.Loop() {
				table = mb.fill(table, DefaultMaglevTable, ids, weights)
			}
		})
	}
}

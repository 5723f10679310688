package strategies

import (
	"math"
	"slices"
	"testing"
)

func TestRingHashPickFollowsRing(t *testing.T) {
	// Every pick is the owner of the first point clockwise from the key's
	// hash, found here by a linear scan of the picker's ring.
	for _, hosts := range [][]int{seq(10), {1, 4, 6}, {7}} {
		p := hashPicker(t, "ring-hash(min_ring=256)", hashEnv(10, nil)).(*ringHash)
		for _, k := range hashKeys(3000, 9) {
			ep := hashPick(p, k, hosts)
			h := hashKey(k)
			want := int(p.ring.owners[0])
			for i, ph := range p.ring.hashes {
				if ph >= h {
					want = int(p.ring.owners[i])
					break
				}
			}
			if ep != want {
				t.Fatalf("hosts %v, key %d: picked %d, first point clockwise is %d's", hosts, k, ep, want)
			}
		}
	}
}

func TestRingHashRebuilds(t *testing.T) {
	// A scripted sequence of host sets: after each, the ring has the
	// expected number of points per host, and a host's points are the same
	// whatever the other hosts (only their number depends on the set).
	p := hashPicker(t, "ring-hash", hashEnv(10, nil)).(*ringHash)
	pointsOf := func() map[int32][]uint64 {
		m := map[int32][]uint64{}
		for i, o := range p.ring.owners {
			m[o] = append(m[o], p.ring.hashes[i])
		}
		return m
	}
	steps := []struct {
		name    string
		hosts   []int
		perHost int
	}{
		{"ten hosts", seq(10), 103},
		{"host 3 ejected", []int{0, 1, 2, 4, 5, 6, 7, 8, 9}, 114},
		{"two hosts", []int{2, 9}, 512},
		{"one host", []int{5}, 1024},
		{"ten again, descending", []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 103},
	}
	var first map[int32][]uint64
	for _, st := range steps {
		hashPick(p, 0, st.hosts)
		pts := pointsOf()
		if len(pts) != len(st.hosts) || len(p.ring.hashes) != st.perHost*len(st.hosts) {
			t.Fatalf("%s: ring of %d points over %d hosts, want %d over %d", st.name, len(p.ring.hashes), len(pts), st.perHost*len(st.hosts), len(st.hosts))
		}
		if first == nil {
			first = pts
		}
		for _, h := range st.hosts {
			got := pts[int32(h)]
			if len(got) != st.perHost {
				t.Errorf("%s: host %d has %d points, want %d", st.name, h, len(got), st.perHost)
			}
			// Points common to both sizes are the same hashes.
			common := min(len(got), len(first[int32(h)]))
			set := map[uint64]bool{}
			for _, x := range first[int32(h)] {
				set[x] = true
			}
			shared := 0
			for _, x := range got {
				if set[x] {
					shared++
				}
			}
			if shared != common {
				t.Errorf("%s: host %d shares %d points with its first ring, want %d", st.name, h, shared, common)
			}
		}
	}
}

// arcShares returns each owner's share of the ring: a point owns the arc
// from the previous point (exclusive) to itself, the first point the arc
// that wraps around. The ring needs at least two points.
func arcShares(r *ring, n int) []float64 {
	shares := make([]float64, n)
	last := r.hashes[len(r.hashes)-1]
	for i, h := range r.hashes {
		prev := last
		if i > 0 {
			prev = r.hashes[i-1]
		}
		shares[r.owners[i]] += float64(h-prev) / math.Exp2(64) // wraps for i = 0
	}
	return shares
}

func TestRingHashWeightedShares(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		weights []float64
		tol     float64 // relative
	}{
		// Large ring: each share is close to its weight.
		{"weights 1:2:3:4, large ring", "ring-hash(min_ring=65536)", []float64{1, 2, 3, 4}, 0.03},
		{"weights 4:1:1:2, large ring", "ring-hash(min_ring=65536)", []float64{4, 1, 1, 2}, 0.03},
		{"weights 1:1:1:1:6, large ring", "ring-hash(min_ring=65536)", []float64{1, 1, 1, 1, 6}, 0.03},
		// Default ring: 103 points for the lightest host, shares vary more.
		{"weights 1:2:3:4, default ring", "ring-hash", []float64{1, 2, 3, 4}, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var total float64
			for _, w := range tt.weights {
				total += w
			}
			n := len(tt.weights)
			// The ring's exact shares.
			p := hashPicker(t, tt.spec, hashEnv(n, tt.weights)).(*ringHash)
			hashPick(p, 0, seq(n))
			shares := arcShares(&p.ring, n)
			var sum float64
			for _, s := range shares {
				sum += s
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("shares %v sum to %v, want 1", shares, sum)
			}
			for ep, share := range shares {
				want := tt.weights[ep] / total
				if math.Abs(share-want) > tt.tol*want {
					t.Errorf("endpoint %d (weight %g) owns %.4f of the ring, want %.4f ± %.0f%%", ep, tt.weights[ep], share, want, 100*tt.tol)
				}
			}
			// Keys through a Balancer follow the ring's shares.
			b, err := New(tt.spec, Env{N: n, Rand: newRand(1), Weights: tt.weights})
			if err != nil {
				t.Fatal(err)
			}
			const picks = 50_000
			counts := make([]int, n)
			for _, k := range hashKeys(picks, 13) {
				ep, done := b.Pick(Request{Key: k, HasKey: true})
				done(ok200)
				counts[ep]++
			}
			var x float64
			for ep, c := range counts {
				exp := picks * shares[ep]
				x += (float64(c) - exp) * (float64(c) - exp) / exp
			}
			if x > chiCritical[n-1] {
				t.Errorf("keys per endpoint %v against ring shares %v: chi-square %.1f > %.2f", counts, shares, x, chiCritical[n-1])
			}
		})
	}
}

func TestRingHashSmallRingExactShares(t *testing.T) {
	// min_ring=1 with three equal hosts: one point each. Keys between two
	// points go to the later point's owner; past the last, to the first.
	p := hashPicker(t, "ring-hash(min_ring=1)", hashEnv(3, nil)).(*ringHash)
	hashPick(p, 0, seq(3))
	if len(p.ring.hashes) != 3 {
		t.Fatalf("ring has %d points, want 3", len(p.ring.hashes))
	}
	owners := slices.Clone(p.ring.owners)
	slices.Sort(owners)
	if !slices.Equal(owners, []int32{0, 1, 2}) {
		t.Fatalf("owners %v, want one point per host", p.ring.owners)
	}
	// Random keys fall in every arc, including the wrapping one.
	for _, k := range hashKeys(20000, 1) {
		h := hashKey(k)
		var want int32
		switch {
		case h <= p.ring.hashes[0] || h > p.ring.hashes[2]:
			want = p.ring.owners[0]
		case h <= p.ring.hashes[1]:
			want = p.ring.owners[1]
		default:
			want = p.ring.owners[2]
		}
		if got := hashPick(p, k, seq(3)); got != int(want) {
			t.Fatalf("key hash %#x: picked %d, want %d (ring %x owners %v)", h, got, want, p.ring.hashes, p.ring.owners)
		}
	}
}

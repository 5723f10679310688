package strategies

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "p2c+slowstart", "p2c+health", "p2c+healthcheck")
}

// weightedShares returns the exact share of picks of each host when an
// inner Picker uniform among its hosts runs behind a weighting with the
// given factors (absent: 1), by enumerating which scaled hosts are kept.
func weightedShares(factors map[int]float64, hosts []int) map[int]float64 {
	factor := func(h int) float64 {
		if f, ok := factors[h]; ok {
			return f
		}
		return 1
	}
	var scaled []int
	for _, h := range hosts {
		if factor(h) < 1 {
			scaled = append(scaled, h)
		}
	}
	shares := map[int]float64{}
	for mask := range 1 << len(scaled) {
		p := 1.0
		dropped := map[int]bool{}
		for i, h := range scaled {
			if mask&(1<<i) != 0 {
				p *= factor(h)
			} else {
				p *= 1 - factor(h)
				dropped[h] = true
			}
		}
		if p == 0 {
			continue
		}
		var kept []int
		for _, h := range hosts {
			if !dropped[h] {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			for _, h := range hosts {
				if factor(h) > 0 {
					kept = append(kept, h)
				}
			}
		}
		if len(kept) == 0 {
			kept = hosts
		}
		for _, h := range kept {
			shares[h] += p / float64(len(kept))
		}
	}
	return shares
}

// uniformInner picks uniformly among the hosts it is given and records
// them.
type uniformInner struct {
	r     *random
	hosts []int
}

func (u *uniformInner) Pick(req Request, hosts []int) (int, func(Outcome)) {
	u.hosts = hosts
	return u.r.Pick(req, hosts)
}

func TestWeightedSharesOracle(t *testing.T) {
	// A lone scaled host among n gets exactly f/n, f times its unscaled
	// share.
	for _, f := range []float64{0, 0.1, 0.5, 0.9} {
		got := weightedShares(map[int]float64{2: f}, seq(5))
		if math.Abs(got[2]-f/5) > 1e-12 {
			t.Errorf("factor %v of 5 hosts: share %v, want %v", f, got[2], f/5)
		}
		var total float64
		for _, s := range got {
			total += s
		}
		if math.Abs(total-1) > 1e-12 {
			t.Errorf("factor %v: shares %v sum to %v", f, got, total)
		}
	}
}

func TestWeightingShares(t *testing.T) {
	tests := []struct {
		name    string
		factors map[int]float64
		hosts   []int
	}{
		{"one host at half of four", map[int]float64{1: 0.5}, seq(4)},
		{"one host at a tenth of five", map[int]float64{4: 0.1}, seq(5)},
		{"three scaled hosts of six", map[int]float64{0: 0.25, 3: 0.5, 5: 0.75}, seq(6)},
		{"every host at half", map[int]float64{0: 0.5, 1: 0.5, 2: 0.5}, seq(3)},
		{"a host at zero is never picked", map[int]float64{2: 0}, seq(4)},
		{"hosts at zero yield to a scaled one", map[int]float64{0: 0, 1: 0, 2: 0.2}, seq(3)},
		{"every given host at zero: all passed", map[int]float64{0: 0, 1: 0, 2: 0}, seq(3)},
		{"scaled endpoint outside the input", map[int]float64{1: 0.3, 5: 0}, []int{1, 2, 4}},
	}
	for _, tt := range tests {
		want := weightedShares(tt.factors, tt.hosts)
		for order, hosts := range hostOrders(tt.hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				w := newWeighting(8, newRand(11))
				w.setInput(hosts)
				for ep, f := range tt.factors {
					w.set(ep, f)
				}
				inner := &uniformInner{r: &random{rand: newRand(12)}}
				const picks = 100_000
				counts := map[int]int{}
				for range picks {
					kept, _ := w.filter(hosts)
					ep, _ := inner.Pick(Request{}, kept)
					counts[ep]++
				}
				var x float64
				df := -1
				for _, h := range tt.hosts {
					if want[h] == 0 {
						if counts[h] != 0 {
							t.Errorf("host %d (share 0) picked %d times", h, counts[h])
						}
						continue
					}
					exp := want[h] * picks
					d := float64(counts[h]) - exp
					x += d * d / exp
					df++
				}
				if df > 0 && x > chiCritical[df] {
					t.Errorf("counts %v, want shares %v: chi-square %.1f > %.2f", counts, want, x, chiCritical[df])
				}
				for h := range counts {
					if !slices.Contains(tt.hosts, h) {
						t.Errorf("picked %d, not among the given hosts %v", h, tt.hosts)
					}
				}
			})
		}
	}
}

func TestWeightingUnscaledIsFree(t *testing.T) {
	w := newWeighting(100, newRand(3))
	hosts := seq(100)
	w.setInput(hosts)
	w.set(7, 0.5)
	w.set(7, 1) // back to unscaled
	for range 100 {
		if got, _ := w.filter(hosts); &got[0] != &hosts[0] || len(got) != len(hosts) {
			t.Fatalf("with no scaled host filter returned a new slice")
		}
	}
	if got, want := w.rand.Uint64(), newRand(3).Uint64(); got != want {
		t.Errorf("filter drew random numbers with no scaled host")
	}
	if allocs := testing.AllocsPerRun(1000, func() { w.filter(hosts) }); allocs != 0 {
		t.Errorf("filter with no scaled host: %v allocations, want 0", allocs)
	}
}

func TestWeightingCachedSetsDoNotAllocate(t *testing.T) {
	w := newWeighting(100, newRand(3))
	hosts := seq(100)
	w.setInput(hosts)
	w.set(7, 0.5)
	w.set(50, 0)
	for range 100 { // both dropped sets are seen
		w.filter(hosts)
	}
	if allocs := testing.AllocsPerRun(1000, func() { w.filter(hosts) }); allocs != 0 {
		t.Errorf("filter with cached dropped sets: %v allocations, want 0", allocs)
	}
}

func TestWeightingReportsChanges(t *testing.T) {
	// filter reports exactly the picks whose kept hosts differ from those
	// of the previous pick.
	hosts, other := seq(6), []int{5, 2, 1}
	steps := []struct {
		name    string
		input   []int           // given with setInput first; nil: none
		factors map[int]float64 // set first
		want    []int
		changed bool
	}{
		{"first input, host 2 at 0", hosts, map[int]float64{2: 0}, []int{0, 1, 3, 4, 5}, true},
		{"nothing new", nil, nil, []int{0, 1, 3, 4, 5}, false},
		{"host 4 at 0 too", nil, map[int]float64{4: 0}, []int{0, 1, 3, 5}, true},
		{"host 4 back", nil, map[int]float64{4: 1}, []int{0, 1, 3, 4, 5}, true},
		{"same dropped set", nil, nil, []int{0, 1, 3, 4, 5}, false},
		{"another input, its order kept", other, nil, []int{5, 1}, true},
		{"every given host at 0: the input", nil, map[int]float64{1: 0, 5: 0}, other, true},
		{"still every given host at 0", nil, nil, other, false},
		{"none scaled, first input again", hosts, map[int]float64{1: 1, 2: 1, 5: 1}, hosts, true},
		{"none scaled, nothing new", nil, nil, hosts, false},
		{"a new input with the same dropped set", []int{0, 1, 2}, nil, []int{0, 1, 2}, true},
	}
	w := newWeighting(6, newRand(1))
	var in []int
	for _, st := range steps {
		if st.input != nil {
			in = st.input
			w.setInput(in)
		}
		for ep, f := range st.factors {
			w.set(ep, f)
		}
		got, changed := w.filter(in)
		if !slices.Equal(got, st.want) || changed != st.changed {
			t.Errorf("%s: filter = %v, changed %v; want %v, %v", st.name, got, changed, st.want, st.changed)
		}
	}
}

// TestWeightingManyDroppedSets scales every host so that nearly every pick
// has its own dropped set: the cache stays bounded, no slice handed out is
// ever rewritten, and each host is kept about half the time.
func TestWeightingManyDroppedSets(t *testing.T) {
	const n, picks = 12, 20_000
	for order, hosts := range hostOrders(seq(n)) {
		t.Run(order, func(t *testing.T) {
			w := newWeighting(n, newRand(5))
			w.setInput(hosts)
			for ep := range n {
				w.set(ep, 0.5)
			}
			snapshots := map[*int][]int{}
			var handed [][]int
			kept := make([]int, n)
			for range picks {
				got, _ := w.filter(hosts)
				if len(got) == 0 {
					t.Fatal("empty filtered slice")
				}
				if snap, ok := snapshots[&got[0]]; ok {
					if !slices.Equal(snap, got) {
						t.Fatalf("slice rewritten: was %v, now %v", snap, got)
					}
				} else {
					snapshots[&got[0]] = slices.Clone(got)
					handed = append(handed, got)
				}
				// got keeps the input's order.
				last := -1
				for _, h := range got {
					i := slices.Index(hosts, h)
					if i <= last {
						t.Fatalf("filtered %v is not a subsequence of %v", got, hosts)
					}
					last = i
					kept[h]++
				}
				if len(w.entries) > weightCacheSize || len(w.index) != len(w.entries) {
					t.Fatalf("cache holds %d entries, %d indexed; bound %d", len(w.entries), len(w.index), weightCacheSize)
				}
			}
			for _, s := range handed {
				if !slices.Equal(snapshots[&s[0]], s) {
					t.Errorf("slice rewritten after it was handed out: was %v, now %v", snapshots[&s[0]], s)
				}
			}
			// Kept with probability 1/2 each, except that an empty draw
			// (probability 2^-12) passes all: 6 standard deviations.
			p := 0.5 + 0.5/math.Pow(2, n)
			sd := math.Sqrt(picks * p * (1 - p))
			for h, k := range kept {
				if math.Abs(float64(k)-picks*p) > 6*sd {
					t.Errorf("host %d kept %d times of %d, want about %.0f", h, k, picks, picks*p)
				}
			}
		})
	}
}

func TestWeightingIndependentOfInputOrder(t *testing.T) {
	asc := seq(8)
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	factors := map[int]float64{1: 0.3, 2: 0.9, 6: 0.5, 7: 0}
	wa, wd := newWeighting(8, newRand(9)), newWeighting(8, newRand(9))
	wa.setInput(asc)
	wd.setInput(desc)
	for ep, f := range factors {
		wa.set(ep, f)
		wd.set(ep, f)
	}
	for i := range 1000 {
		ka, _ := wa.filter(asc)
		kd, _ := wd.filter(desc)
		a, d := slices.Sorted(slices.Values(ka)), slices.Sorted(slices.Values(kd))
		if !slices.Equal(a, d) {
			t.Fatalf("pick %d: kept %v from ascending input, %v from descending", i, a, d)
		}
	}
}

func TestWeightingSetClamps(t *testing.T) {
	w := newWeighting(3, newRand(1))
	for _, tt := range []struct{ in, want float64 }{
		{-1, 0}, {math.NaN(), 0}, {0.25, 0.25}, {2, 1}, {math.Inf(1), 1},
	} {
		w.set(1, tt.in)
		if got := w.get(1); got != tt.want {
			t.Errorf("set(%v): factor %v, want %v", tt.in, got, tt.want)
		}
		want := []int(nil)
		if tt.want < 1 {
			want = []int{1}
		}
		if !slices.Equal(w.scaled, want) {
			t.Errorf("set(%v): scaled %v, want %v", tt.in, w.scaled, want)
		}
	}
}

// BenchmarkScaledPickDone measures Pick and done while some hosts are
// scaled: one host in slow start, or three hosts degraded, critical and
// unhealthy, among n.
func BenchmarkScaledPickDone(b *testing.B) {
	for _, spec := range []string{"p2c+slowstart", "p2c+health"} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", spec, n), func(b *testing.B) {
				lb, err := New(spec, Env{N: n, Rand: newRand(1), Clock: newFakeClock()})
				if err != nil {
					b.Fatal(err)
				}
				if spec == "p2c+slowstart" {
					if err := lb.SetHosts(seq(n - 1)); err != nil {
						b.Fatal(err)
					}
					_, done := lb.Pick(Request{})
					done(ok200)
					if err := lb.SetHosts(seq(n)); err != nil {
						b.Fatal(err)
					}
				} else {
					h := lb.picker.(*health)
					for ep, l := range []healthLevel{levelDegraded, levelCritical, levelUnhealthy} {
						h.setLevel(ep, l, epoch0)
					}
				}
				ok := Outcome{Status: 200, Latency: 10 * time.Millisecond}
				b.ReportAllocs()
				for b.Loop() {
					_, done := lb.Pick(Request{})
					done(ok)
				}
			})
		}
	}
}

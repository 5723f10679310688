package strategies

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "weighted-round-robin", "weighted-random", "least-request", "least-request(full_scan=true)", "biased-random")
}

// Helpers shared by the tests of the weighted strategies.

// wtPermutations returns every ordering of s (n! of them, in a fixed order).
func wtPermutations[T any](s []T) [][]T {
	if len(s) <= 1 {
		return [][]T{slices.Clone(s)}
	}
	var out [][]T
	for i := range s {
		rest := slices.Concat(s[:i], s[i+1:])
		for _, p := range wtPermutations(rest) {
			out = append(out, append([]T{s[i]}, p...))
		}
	}
	return out
}

// Chi-square critical values by degrees of freedom, at p = 0.001 for single
// tests and at p = 1e-6 for sweeps over many orders, so that a sweep of a
// few hundred tests as a whole stays below p = 0.001.
var (
	wtCritical001 = []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59, 31.26}
	wtCritical1e6 = []float64{0, 23.93, 27.63, 30.66, 33.38, 35.89, 38.26, 40.52, 42.70, 44.81, 46.86, 48.87}
)

// wtCheckShares checks counts (by index) against the probabilities want
// (same indexes): an index with probability 0 must never be counted, the
// others pass Pearson's chi-square test at the given critical values.
func wtCheckShares(t *testing.T, counts []int, want []float64, critical []float64) {
	t.Helper()
	total := 0
	for _, c := range counts {
		total += c
	}
	var x float64
	df := -1
	for i, p := range want {
		if p == 0 {
			if counts[i] != 0 {
				t.Errorf("index %d has probability 0 but was counted %d times (counts %v)", i, counts[i], counts)
			}
			continue
		}
		exp := p * float64(total)
		d := float64(counts[i]) - exp
		x += d * d / exp
		df++
	}
	if df > 0 && x > critical[df] {
		t.Errorf("counts %v, want shares %v: chi-square %.2f > %.2f (%d degrees of freedom)", counts, want, x, critical[df], df)
	}
}

// wtCountingSource is a rand.Source that counts the numbers drawn from it.
type wtCountingSource struct {
	src   rand.Source
	draws int
}

func (s *wtCountingSource) Uint64() uint64 {
	s.draws++
	return s.src.Uint64()
}

// wtHide is a wrapper for tests that hides the endpoints in hidden from its
// inner Picker the way the eject wrapper does: it passes the caller's hosts
// when it hides none of them, and otherwise the hosts without the hidden
// ones, telling the inner Picker of each change through a hostFeed.
type wtHide struct {
	inner    Picker
	hidden   map[int]bool
	filtered []int
	stale    bool
	feed     hostFeed
}

func newWtHide(inner Picker) *wtHide {
	return &wtHide{inner: inner, stale: true, feed: newHostFeed(inner)}
}

func (w *wtHide) set(hidden ...int) {
	w.hidden = map[int]bool{}
	for _, h := range hidden {
		w.hidden[h] = true
	}
	w.stale = true
}

func (w *wtHide) UpdateHosts([]int) { w.stale = true }

func (w *wtHide) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if w.stale {
		w.filtered = w.filtered[:0]
		for _, h := range hosts {
			if !w.hidden[h] {
				w.filtered = append(w.filtered, h)
			}
		}
		w.stale = false
		w.feed.changed()
	}
	if len(w.hidden) > 0 {
		hosts = w.filtered
	}
	w.feed.sync(hosts)
	return w.inner.Pick(req, hosts)
}

// wtPicks returns the next n picks of p from hosts, reporting each at once.
func wtPicks(p Picker, hosts []int, n int) []int {
	picks := make([]int, n)
	for i := range picks {
		ep, done := feedPick(p, Request{}, hosts)
		done(ok200)
		picks[i] = ep
	}
	return picks
}

// wtCurrent returns the current weights of w by endpoint id, including the
// growth deferred while the weights are equal.
func wtCurrent(w *weightedRoundRobin) []float64 {
	cur := slices.Clone(w.current)
	for _, h := range w.heap {
		cur[h] += w.lag * w.weights[h]
	}
	return cur
}

// wtSmoothRR is nginx's smooth weighted round robin written plainly, to
// check weightedRoundRobin against: every pick adds each given host's weight
// to its current weight and takes the total from the largest (ties to the
// lowest id), the total summed in id order.
type wtSmoothRR struct {
	weights, current []float64
}

func (r *wtSmoothRR) pick(hosts []int) int {
	best := -1
	for _, h := range hosts {
		r.current[h] += r.weights[h]
		if best < 0 || r.current[h] > r.current[best] || r.current[h] == r.current[best] && h < best {
			best = h
		}
	}
	var total float64
	for _, h := range slices.Sorted(slices.Values(hosts)) {
		total += r.weights[h]
	}
	r.current[best] -= total
	return best
}

func TestWeightedRoundRobinSequence(t *testing.T) {
	tests := []struct {
		name    string
		weights []float64 // by endpoint id
		hosts   []int
		want    []int
	}{
		{"nginx example 5 1 1", []float64{5, 1, 1}, seq(3), []int{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}},
		{"heaviest is the last id", []float64{1, 1, 5}, seq(3), []int{2, 2, 0, 2, 1, 2, 2, 2, 2, 0, 2, 1, 2, 2}},
		{"equal weights is round robin", []float64{1, 1, 1, 1}, seq(4), []int{0, 1, 2, 3, 0, 1, 2, 3}},
		{"equal float weights", []float64{2.5, 2.5, 2.5}, seq(3), []int{0, 1, 2, 0, 1, 2}},
		{"float weights 2 1 1 scaled", []float64{0.5, 0.25, 0.25}, seq(3), []int{0, 1, 2, 0, 0, 1, 2, 0}},
		{"subset 5 1 3 of four endpoints", []float64{5, 1, 1, 3}, []int{0, 2, 3}, []int{0, 3, 0, 2, 0, 3, 0, 3, 0, 0, 3}},
		{"single host", []float64{1, 3}, []int{1}, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		for _, hosts := range wtPermutations(tt.hosts) {
			t.Run(fmt.Sprintf("%s/hosts=%v", tt.name, hosts), func(t *testing.T) {
				w := newWeightedRoundRobin(tt.weights)
				if got := wtPicks(w, hosts, len(tt.want)); !slices.Equal(got, tt.want) {
					t.Errorf("weights %v: picks %v, want %v", tt.weights, got, tt.want)
				}
			})
		}
	}
}

func TestWeightedRoundRobinShares(t *testing.T) {
	// Over every stretch of as many picks as the total weight, integer
	// weights give each host exactly its weight in picks, and the current
	// weights return to 0.
	weights := []float64{3, 1, 4, 1, 5, 9}
	for order, hosts := range hostOrders(seq(len(weights))) {
		t.Run(order, func(t *testing.T) {
			w := newWeightedRoundRobin(weights)
			for period := range 5 {
				counts := make([]int, len(weights))
				for _, ep := range wtPicks(w, hosts, 23) {
					counts[ep]++
				}
				for ep, c := range counts {
					if float64(c) != weights[ep] {
						t.Fatalf("period %d: counts %v, want the weights %v", period, counts, weights)
					}
				}
				if cur := wtCurrent(w); !slices.Equal(cur, make([]float64, len(weights))) {
					t.Fatalf("period %d: current weights %v, want zeros", period, cur)
				}
			}
		})
	}
}

func TestWeightedRoundRobinHostChanges(t *testing.T) {
	// Weights {5, 1, 1}; each step gives a host set (UpdateHosts when it
	// changes) and the pick and current weights expected after it.
	type step struct {
		hosts   []int
		want    int
		current []float64
	}
	tests := []struct {
		name    string
		weights []float64
		steps   []step
	}{
		{"ejected host keeps its current weight", []float64{5, 1, 1}, []step{
			{[]int{0, 1, 2}, 0, []float64{-2, 1, 1}},
			{[]int{0, 1, 2}, 0, []float64{-4, 2, 2}},
			// 0 leaves: the total is 2 and 0 stays at -4.
			{[]int{1, 2}, 1, []float64{-4, 1, 3}},
			{[]int{1, 2}, 2, []float64{-4, 2, 2}},
			{[]int{1, 2}, 1, []float64{-4, 1, 3}},
			// 0 returns at -4 and waits its turn.
			{[]int{0, 1, 2}, 2, []float64{1, 2, -3}},
			{[]int{0, 1, 2}, 0, []float64{-1, 3, -2}},
			{[]int{0, 1, 2}, 0, []float64{-3, 4, -1}},
			{[]int{0, 1, 2}, 1, []float64{2, -2, 0}},
		}},
		{"new endpoint starts at zero", []float64{1, 1, 1}, []step{
			{[]int{0, 1}, 0, []float64{-1, 1, 0}},
			{[]int{0, 1}, 1, []float64{0, 0, 0}},
			{[]int{0, 1}, 0, []float64{-1, 1, 0}},
			{[]int{0, 1, 2}, 1, []float64{0, -1, 1}},
			{[]int{0, 1, 2}, 2, []float64{1, 0, -1}},
			{[]int{0, 1, 2}, 0, []float64{-1, 1, 0}},
		}},
		{"single host leaves current weights alone", []float64{2, 1}, []step{
			{[]int{0, 1}, 0, []float64{-1, 1}},
			{[]int{1}, 1, []float64{-1, 1}},
			{[]int{0}, 0, []float64{-1, 1}},
			{[]int{0, 1}, 1, []float64{1, -1}},
		}},
	}
	for _, tt := range tests {
		for _, order := range []string{"ascending", "descending", "shuffled"} {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				w := newWeightedRoundRobin(tt.weights)
				var hosts []int
				for i, s := range tt.steps {
					if !slices.Equal(slices.Sorted(slices.Values(hosts)), s.hosts) {
						hosts = hostOrders(s.hosts)[order]
					}
					ep, done := feedPick(w, Request{}, hosts)
					done(ok200)
					if cur := wtCurrent(w); ep != s.want || !slices.Equal(cur, s.current) {
						t.Fatalf("step %d, hosts %v: picked %d with current weights %v, want %d with %v", i, hosts, ep, cur, s.want, s.current)
					}
				}
			})
		}
	}
}

func TestWeightedRoundRobinAgainstPlain(t *testing.T) {
	// Random host sets (in random orders, sometimes a single host, and
	// sometimes every host again, as the eject wrapper passes) over
	// weights chosen so that many sets have equal weights: every pick and
	// every current weight must match the plain algorithm. The current
	// weights are brought up to date every 5 picks here, so that this is
	// exercised too; integer weights keep the arithmetic exact.
	for seed := uint64(1); seed <= 30; seed++ {
		r := newRand(seed)
		n := 2 + r.IntN(7)
		weights := make([]float64, n)
		for i := range weights {
			weights[i] = float64(1 + r.IntN(2)*r.IntN(4))
		}
		w := newWeightedRoundRobin(weights)
		w.settle = 5
		plain := &wtSmoothRR{weights: weights, current: make([]float64, n)}
		all := seq(n)
		hosts := all
		for step := range 2000 {
			if r.IntN(20) == 0 {
				switch r.IntN(3) {
				case 0:
					hosts = all
				default:
					hosts = nil
					for _, h := range r.Perm(n) {
						if r.IntN(3) > 0 {
							hosts = append(hosts, h)
						}
					}
					if len(hosts) == 0 {
						hosts = []int{r.IntN(n)}
					}
				}
			}
			got, done := feedPick(w, Request{}, hosts)
			done(ok200)
			if want := plain.pick(hosts); got != want {
				t.Fatalf("seed %d step %d, weights %v, hosts %v: picked %d, want %d", seed, step, weights, hosts, got, want)
			}
			if cur := wtCurrent(w); !slices.Equal(cur, plain.current) {
				t.Fatalf("seed %d step %d, weights %v, hosts %v: current weights %v, want %v", seed, step, weights, hosts, cur, plain.current)
			}
		}
	}
}

func TestWeightedRoundRobinThroughBalancer(t *testing.T) {
	t.Run("SetHosts", func(t *testing.T) {
		b, err := New("weighted-round-robin", Env{N: 3, Rand: newRand(1), Clock: newFakeClock(), Weights: []float64{5, 1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		pick := func(n int) []int {
			var picks []int
			for range n {
				ep, done := b.Pick(Request{})
				done(ok200)
				picks = append(picks, ep)
			}
			return picks
		}
		if got, want := pick(7), []int{0, 0, 1, 0, 2, 0, 0}; !slices.Equal(got, want) {
			t.Fatalf("picks %v, want %v", got, want)
		}
		if err := b.SetHosts([]int{2, 1}); err != nil {
			t.Fatal(err)
		}
		if got, want := pick(4), []int{1, 2, 1, 2}; !slices.Equal(got, want) {
			t.Fatalf("after SetHosts(2, 1): picks %v, want %v", got, want)
		}
		if err := b.SetHosts([]int{0, 1, 2}); err != nil {
			t.Fatal(err)
		}
		if got, want := pick(7), []int{0, 0, 1, 0, 2, 0, 0}; !slices.Equal(got, want) {
			t.Fatalf("after SetHosts(0, 1, 2): picks %v, want %v", got, want)
		}
	})
	t.Run("hidden and shown again", func(t *testing.T) {
		// The wrapper passes the Balancer's hosts again once nothing is
		// hidden: the total weight must follow.
		b, err := New("weighted-round-robin", Env{N: 3, Rand: newRand(1), Clock: newFakeClock(), Weights: []float64{5, 1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		hide := newWtHide(b.picker)
		b.picker, b.feed = hide, newHostFeed(hide)
		var got []int
		pick := func(n int) {
			for range n {
				ep, done := b.Pick(Request{})
				done(ok200)
				got = append(got, ep)
			}
		}
		pick(1)
		hide.set(0)
		pick(3)
		hide.set()
		pick(5)
		if want := []int{0, 1, 2, 1, 0, 2, 0, 0, 1}; !slices.Equal(got, want) {
			t.Errorf("picks %v, want %v", got, want)
		}
	})
}

func TestWeightedStrategiesRejectParameters(t *testing.T) {
	for _, name := range []string{"weighted-round-robin", "weighted-random", "biased-random"} {
		t.Run(name, func(t *testing.T) {
			spec := name + "(weight=2)"
			want := name + `: unknown parameter "weight" (` + name + " takes no parameters)"
			if _, err := Parse(spec); err == nil || err.Error() != want {
				t.Errorf("Parse(%q) error %v, want %s", spec, err, want)
			}
			if _, err := Parse(name + "()"); err != nil {
				t.Errorf("Parse(%q): %v", name+"()", err)
			}
		})
	}
}

// BenchmarkWeightedPickDone is BenchmarkPickDone for the weighted
// strategies with unequal weights (1 to 5), which take their weighted
// paths: weighted-random's table, least-request's schedule.
func BenchmarkWeightedPickDone(b *testing.B) {
	for _, spec := range []string{"weighted-round-robin", "weighted-random", "least-request", "least-request(active_request_bias=0.5)"} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", spec, n), func(b *testing.B) {
				weights := make([]float64, n)
				for i := range weights {
					weights[i] = float64(i%5 + 1)
				}
				lb, err := New(spec, Env{N: n, Rand: newRand(1), Clock: newFakeClock(), Weights: weights})
				if err != nil {
					b.Fatal(err)
				}
				ok := Outcome{Status: 200, Latency: 10 * time.Millisecond, Load: 3, HasLoad: true}
				b.ReportAllocs()
				for b.Loop() {
					_, done := lb.Pick(Request{})
					done(ok)
				}
			})
		}
	}
}

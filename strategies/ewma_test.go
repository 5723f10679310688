package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "peak-ewma", "peak-ewma(failure_penalty=100ms)", "ewma", "server-load")
}

// sampledPerms returns every permutation of 0..n-1.
func sampledPerms(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range sampledPerms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// sampledSubsets calls f with every k-subset of 0..n-1.
func sampledSubsets(n, k int, f func([]int)) {
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) == k {
			f(cur)
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
}

// sampledExpect returns the probability of each of the given loads to be
// picked when k distinct ones are drawn uniformly at random (every one when
// k is 0 or at least len(loads)) and the least wins, ties uniformly: the
// average over every k-subset, the subset's least loads sharing it equally.
func sampledExpect(loads []float64, k int) []float64 {
	n := len(loads)
	if k == 0 || k > n {
		k = n
	}
	share := make([]float64, n)
	subsets := 0
	sampledSubsets(n, k, func(s []int) {
		subsets++
		least := math.Inf(1)
		for _, i := range s {
			least = min(least, loads[i])
		}
		var ties []int
		for _, i := range s {
			if loads[i] == least {
				ties = append(ties, i)
			}
		}
		for _, i := range ties {
			share[i] += 1 / float64(len(ties))
		}
	})
	for i := range share {
		share[i] /= float64(subsets)
	}
	return share
}

// sampledChiCritical holds chi-square critical values at p = 1e-6 by
// degrees of freedom: the selection tests run over a thousand fixed-seed
// comparisons, so that a sound implementation fails none of them by chance
// (about one in a thousand runs of fresh seeds would), while a biased one
// fails by far with the picks each test makes.
var sampledChiCritical = []float64{0, 23.93, 27.63, 30.66, 33.38, 35.89, 38.26}

// sampledCheckShares checks pick counts against expected shares: a host
// with share 0 must never be picked, one with share 1 always, and the rest
// pass a chi-square test at p = 1e-6.
func sampledCheckShares(t *testing.T, counts []int, want []float64, picks int) {
	t.Helper()
	var x float64
	df := -1
	for i, share := range want {
		switch {
		case share < 1e-12:
			if counts[i] != 0 {
				t.Errorf("host #%d (share 0) picked %d of %d times; counts %v, want shares %v", i, counts[i], picks, counts, want)
			}
			continue
		case share > 1-1e-12:
			if counts[i] != picks {
				t.Errorf("host #%d (share 1) picked %d of %d times; counts %v", i, counts[i], picks, counts)
			}
		}
		exp := share * float64(picks)
		d := float64(counts[i]) - exp
		x += d * d / exp
		df++
	}
	if df >= len(sampledChiCritical) {
		t.Fatalf("no chi-square critical value for %d degrees of freedom", df)
	}
	if df > 0 && x > sampledChiCritical[df] {
		t.Errorf("counts %v, want shares %v: chi-square %.1f > %.2f", counts, want, x, sampledChiCritical[df])
	}
}

// sampledSelection runs a selection test: the hosts (endpoint ids, a
// subset of 0..n-1) get the states 0..len(hosts)-1 in every assignment,
// whose loads are loads, and are passed to Pick in every order (every
// permutation when the winner is certain, else ascending, descending and
// shuffled). build returns a Picker whose endpoint ep has state
// stateOf[ep] (-1 for the endpoints outside hosts). k is the choice count
// (0: all). Each subtest makes picks picks, or 100 when the winner is
// certain.
func sampledSelection(t *testing.T, n int, hosts []int, loads []float64, k int, picks int, build func(stateOf []int, r *rand.Rand) Picker) {
	t.Helper()
	want := sampledExpect(loads, k)
	certain := slices.ContainsFunc(want, func(s float64) bool { return s > 1-1e-12 })
	for pi, perm := range sampledPerms(len(hosts)) {
		stateOf := make([]int, n)
		for ep := range stateOf {
			stateOf[ep] = -1
		}
		for state, i := range perm {
			stateOf[hosts[i]] = state
		}
		orders := hostOrders(hosts)
		if certain {
			orders = map[string][]int{}
			for _, p := range sampledPerms(len(hosts)) {
				order := make([]int, len(hosts))
				for i, j := range p {
					order[i] = hosts[j]
				}
				orders[fmt.Sprint(order)] = order
			}
		}
		count := picks
		if certain {
			count = 100
		}
		for name, order := range orders {
			t.Run(fmt.Sprintf("states %v/%s", stateOf, name), func(t *testing.T) {
				p := build(stateOf, newRand(uint64(pi*7+len(name))))
				counts := make([]int, len(loads))
				for range count {
					ep, _ := p.Pick(Request{}, order)
					if stateOf[ep] < 0 {
						t.Fatalf("picked endpoint %d, not one of hosts %v", ep, order)
					}
					counts[stateOf[ep]]++
				}
				sampledCheckShares(t, counts, want, count)
			})
		}
	}
}

func TestEWMAParams(t *testing.T) {
	tests := []struct {
		spec    string
		want    int    // choice count
		wantErr string // "" for none
	}{
		{"ewma", 2, ""},
		{"ewma()", 2, ""},
		{"ewma(choice_count=0)", 0, ""},
		{"ewma(choice_count=2)", 2, ""},
		{"ewma(choice_count=7)", 7, ""},
		{"ewma(choice_count=1)", 0, `ewma: choice_count: want 0 (scan every host) or an integer >= 2, got "1"`},
		{"ewma(choice_count=-2)", 0, `ewma: choice_count: want 0 (scan every host) or an integer >= 2, got "-2"`},
		{"ewma(choice_count=two)", 0, `ewma: choice_count: want 0 (scan every host) or an integer >= 2, got "two"`},
		{"ewma(choices=2)", 0, `ewma: unknown parameter "choices" (allowed: choice_count)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b := newChecked(t, tt.spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}, tt.wantErr)
			if b == nil {
				return
			}
			if got := b.picker.(*ewma).choose.count; got != tt.want {
				t.Errorf("choice count %d, want %d", got, tt.want)
			}
		})
	}
}

// TestEWMAScripted feeds one host a sequence of latencies and checks its
// average, smoothing factor and calm count after each.
func TestEWMAScripted(t *testing.T) {
	ms := func(f float64) float64 { return f * 1e6 }
	type step struct {
		latency time.Duration
		failed  bool
		ewma    float64 // nanoseconds
		alpha   float64
		calm    int32
	}
	calm := func(latency time.Duration, ewma, alpha float64, counts ...int32) []step {
		var s []step
		for _, c := range counts {
			s = append(s, step{latency: latency, ewma: ewma, alpha: alpha, calm: c})
		}
		return s
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first sample sets the average", []step{
			{latency: 40 * time.Millisecond, ewma: ms(40), alpha: 0.1},
		}},
		{"five calm samples step alpha down to the floor and no further", slices.Concat(
			[]step{{latency: 100 * time.Millisecond, ewma: ms(100), alpha: 0.1}},
			calm(100*time.Millisecond, ms(100), 0.1, 1, 2, 3, 4),
			calm(100*time.Millisecond, ms(100), 0.05, 0),
			calm(100*time.Millisecond, ms(100), 0.05, 1, 2, 3, 4, 0, 1),
		)},
		{"anomaly raises alpha to 0.3 and weighs the sample with it", []step{
			{latency: 100 * time.Millisecond, ewma: ms(100), alpha: 0.1},
			{latency: 200 * time.Millisecond, ewma: ms(130), alpha: 0.3}, // deviation 100%
			{latency: 130 * time.Millisecond, ewma: ms(130), alpha: 0.3, calm: 1},
			{latency: 91 * time.Millisecond, ewma: ms(118.3), alpha: 0.3}, // deviation 30%: breaks the streak only
			{latency: 50 * time.Millisecond, ewma: ms(97.81), alpha: 0.3}, // deviation 57.7%
		}},
		{"calm steps down by 0.05 per five samples", slices.Concat(
			[]step{
				{latency: 100 * time.Millisecond, ewma: ms(100), alpha: 0.1},
				{latency: 200 * time.Millisecond, ewma: ms(130), alpha: 0.3},
			},
			calm(130*time.Millisecond, ms(130), 0.3, 1, 2, 3, 4),
			calm(130*time.Millisecond, ms(130), 0.25, 0, 1, 2, 3, 4),
			calm(130*time.Millisecond, ms(130), 0.2, 0),
			// 4% above: calm, moves the average by alpha 0.2.
			[]step{{latency: 135200 * time.Microsecond, ewma: ms(131.04), alpha: 0.2, calm: 1}},
		)},
		{"deviation of exactly 5% is not calm", []step{
			{latency: 100 * time.Millisecond, ewma: ms(100), alpha: 0.1},
			{latency: 100 * time.Millisecond, ewma: ms(100), alpha: 0.1, calm: 1},
			{latency: 105 * time.Millisecond, ewma: ms(100.5), alpha: 0.1, calm: 0},
		}},
		{"deviation of exactly 30% is not an anomaly", []step{
			{latency: 100 * time.Millisecond, ewma: ms(100), alpha: 0.1},
			{latency: 130 * time.Millisecond, ewma: ms(103), alpha: 0.1},
		}},
		{"zero average: a zero sample is calm, a positive one an anomaly", []step{
			{latency: 0, ewma: 0, alpha: 0.1},
			{latency: 0, ewma: 0, alpha: 0.1, calm: 1},
			{latency: 10 * time.Millisecond, ewma: ms(3), alpha: 0.3},
		}},
		{"failures feed their latency", []step{
			{latency: 50 * time.Millisecond, ewma: ms(50), alpha: 0.1},
			{latency: time.Millisecond, failed: true, ewma: ms(35.3), alpha: 0.3},
			{latency: time.Millisecond, failed: true, ewma: ms(25.01), alpha: 0.3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inflight := make([]int64, 2)
			e := newEWMA(2, 2, newRand(1), inflight)
			if h := e.hosts[1]; h.measured || h.factor() != 0.1 || h.ewma != 0 {
				t.Fatalf("initial state %+v, want unmeasured with alpha 0.1", h)
			}
			for i, s := range tt.steps {
				o := Outcome{Status: 200, Latency: s.latency}
				if s.failed {
					o.Status = 503
				}
				e.dones[1](o)
				h := e.hosts[1]
				if !h.measured || math.Abs(h.ewma-s.ewma) > 1e-6*max(1, s.ewma) || math.Abs(h.factor()-s.alpha) > 1e-12 || h.calm != s.calm {
					t.Fatalf("step %d (%v): ewma %.6gms alpha %g calm %d, want ewma %.6gms alpha %g calm %d",
						i, s.latency, h.ewma/1e6, h.factor(), h.calm, s.ewma/1e6, s.alpha, s.calm)
				}
			}
			if h := e.hosts[0]; h.measured {
				t.Errorf("endpoint 0 got a sample: %+v", h)
			}
		})
	}
}

func TestEWMAAlphaFromAnomalyToFloor(t *testing.T) {
	e := newEWMA(1, 2, newRand(1), make([]int64, 1))
	send := func(d time.Duration) { e.dones[0](Outcome{Status: 200, Latency: d}) }
	send(10 * time.Millisecond)
	send(time.Second)
	if a := e.hosts[0].factor(); a != 0.3 {
		t.Fatalf("alpha after an anomaly = %g, want 0.3", a)
	}
	// Hold the latency at the average: every sample is calm.
	want := []float64{0.25, 0.2, 0.15, 0.1, 0.05, 0.05, 0.05}
	for step, w := range want {
		for range 5 {
			send(time.Duration(e.hosts[0].ewma))
		}
		if a := e.hosts[0].factor(); math.Abs(a-w) > 1e-12 {
			t.Fatalf("after %d calm samples alpha = %g, want %g", 5*(step+1), a, w)
		}
	}
}

// ewmaWith returns an ewma Picker whose endpoints have the given averages
// in milliseconds (negative: no sample yet) and requests in flight.
func ewmaWith(count int, r *rand.Rand, avg []float64, inflight []int64) *ewma {
	e := newEWMA(len(avg), count, r, inflight)
	for ep, a := range avg {
		if a >= 0 {
			e.hosts[ep].ewma, e.hosts[ep].measured = a*1e6, true
		}
	}
	return e
}

func TestEWMASelection(t *testing.T) {
	type state struct {
		avg      float64 // ms; negative: unmeasured
		inflight int64
	}
	tests := []struct {
		name   string
		n      int   // endpoints
		hosts  []int // nil: all
		states []state
		counts []int // choice counts to run
	}{
		{"distinct averages", 4, nil, []state{{10, 0}, {20, 0}, {30, 0}, {40, 0}}, []int{0, 2, 3, 4}},
		{"in flight multiplies the average", 4, nil, []state{{10, 3}, {20, 0}, {15, 1}, {50, 0}}, []int{0, 2, 3}},
		{"unmeasured hosts first", 3, nil, []state{{-1, 5}, {1, 0}, {2, 0}}, []int{0, 2}},
		{"ties", 4, nil, []state{{10, 1}, {20, 0}, {12, 2}, {5, 1}}, []int{0, 2, 3}},
		{"all equal", 4, nil, []state{{7, 0}, {7, 0}, {7, 0}, {7, 0}}, []int{0, 2, 3}},
		{"subset of endpoints", 7, []int{1, 4, 5, 6}, []state{{10, 0}, {20, 1}, {5, 0}, {30, 0}}, []int{0, 2, 3}},
		{"two hosts", 2, nil, []state{{10, 0}, {20, 0}}, []int{2}},
		{"one host", 3, []int{2}, []state{{10, 0}}, []int{0, 2}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(tt.n)
		}
		loads := make([]float64, len(tt.states))
		for i, s := range tt.states {
			loads[i] = max(s.avg, 0) * float64(s.inflight+1)
		}
		for _, k := range tt.counts {
			t.Run(fmt.Sprintf("%s/choice_count=%d", tt.name, k), func(t *testing.T) {
				sampledSelection(t, tt.n, hosts, loads, k, 4000, func(stateOf []int, r *rand.Rand) Picker {
					avg := make([]float64, tt.n)
					inflight := make([]int64, tt.n)
					for ep, s := range stateOf {
						if s < 0 {
							continue // outside hosts: the best, if picked
						}
						avg[ep], inflight[ep] = tt.states[s].avg, tt.states[s].inflight
					}
					return ewmaWith(k, r, avg, inflight)
				})
			})
		}
	}
}

func TestSampledMinPermutationFollowsHostCount(t *testing.T) {
	// Three of five, then three of four: the kept permutation is rebuilt
	// for the new length and picks stay among the given hosts.
	loads := []float64{5, 1, 4, 2, 3}
	s := sampledMin{rand: newRand(3), count: 3, load: func(ep int) float64 { return loads[ep] }}
	for range 100 {
		if ep := s.pick(seq(5)); loads[ep] > 3 {
			t.Fatalf("picked %d (load %g) among 3 of 5: two less loaded hosts exist", ep, loads[ep])
		}
	}
	hosts := []int{0, 2, 3, 4}
	counts := make([]int, len(hosts))
	const picks = 20_000
	for range picks {
		ep := s.pick(hosts)
		i := slices.Index(hosts, ep)
		if i < 0 {
			t.Fatalf("picked %d, not in %v", ep, hosts)
		}
		counts[i]++
	}
	if len(s.perm) != 4 {
		t.Errorf("permutation of length %d for 4 hosts", len(s.perm))
	}
	// Among 3 of {0:5, 2:4, 3:2, 4:3}: 3 wins when drawn (3/4), 4 when drawn
	// without 3 (1/4); 0 and 2 never.
	sampledCheckShares(t, counts, []float64{0, 0, 0.75, 0.25}, picks)
}

// TestEWMAFastFailuresAttract drives the Balancer with one endpoint that
// fails in 1ms while the others answer in 50ms: the failing one takes most
// of the traffic, the behaviour this strategy is in the harness to show.
func TestEWMAFastFailuresAttract(t *testing.T) {
	for _, spec := range []string{"ewma", "ewma(choice_count=0)"} {
		t.Run(spec, func(t *testing.T) {
			clock := newFakeClock()
			b, err := New(spec, Env{N: 5, Rand: newRand(11), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			const picks = 5000
			counts := pickFastFailing(b, clock, 5, picks, 50*time.Millisecond)
			if counts[0] < picks/3 {
				t.Errorf("counts %v: the fast-failing endpoint 0 got under a third of %d picks", counts, picks)
			}
			if strings.Contains(spec, "=0") && counts[0] < picks-10 {
				t.Errorf("counts %v: full scan should send all but the first picks to endpoint 0", counts)
			}
		})
	}
}

func TestEWMAThroughBalancerSpreadsInFlight(t *testing.T) {
	// Two endpoints with equal averages: held requests alternate, since the
	// factor in flight + 1 makes the idle one cheaper.
	b, err := New("ewma(choice_count=0)", Env{N: 2, Rand: newRand(4), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	for ep := range 2 {
		b.picker.(*ewma).dones[ep](Outcome{Status: 200, Latency: 20 * time.Millisecond})
	}
	var dones []func(Outcome)
	for i := range 8 {
		_, done := b.Pick(Request{})
		dones = append(dones, done)
		if got := b.InFlight(); max(got[0], got[1])-min(got[0], got[1]) > 1 {
			t.Fatalf("pick %d: InFlight() = %v, want balanced", i, got)
		}
	}
	for _, done := range dones {
		done(Outcome{Status: 200, Latency: 20 * time.Millisecond})
	}
	if got := b.InFlight(); !slices.Equal(got, []int64{0, 0}) {
		t.Errorf("InFlight() = %v after every done", got)
	}
}

func TestLatencyStrategiesPickAllocations(t *testing.T) {
	for _, spec := range []string{"peak-ewma", "peak-ewma(failure_penalty=100ms,default_rtt=10ms)", "ewma", "ewma(choice_count=3)", "ewma(choice_count=0)", "server-load", "server-load(choice_count=5,inflight=true)"} {
		t.Run(spec, func(t *testing.T) {
			clock := newFakeClock()
			b, err := New(spec, Env{N: 100, Rand: newRand(1), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			o := Outcome{Status: 200, Latency: 10 * time.Millisecond, Load: 3, HasLoad: true}
			for range 200 {
				_, done := b.Pick(Request{})
				clock.Advance(time.Millisecond)
				done(o)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				_, done := b.Pick(Request{})
				clock.Advance(time.Millisecond)
				done(o)
			})
			// The Balancer's pending call and its done; the strategy adds none.
			if allocs > 2 {
				t.Errorf("Pick+done: %v allocations, want at most 2", allocs)
			}
		})
	}
}

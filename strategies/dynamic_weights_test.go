package strategies

import (
	"math"
	"slices"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "dynamic-weights")
}

func TestDynamicWeightsParse(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"defaults", "dynamic-weights", ""},
		{"all", "dynamic-weights(interval=1s,smoothing=1,max_ratio=4)", ""},
		{"zero interval", "dynamic-weights(interval=0s)", `dynamic-weights: interval: want a duration > 0, got "0s"`},
		{"bad interval", "dynamic-weights(interval=5)", `dynamic-weights: interval: want a duration like "5s", got "5"`},
		{"zero smoothing", "dynamic-weights(smoothing=0)", `dynamic-weights: smoothing: want a number in (0, 1], got "0"`},
		{"big smoothing", "dynamic-weights(smoothing=1.5)", `dynamic-weights: smoothing: want a number in (0, 1], got "1.5"`},
		{"small ratio", "dynamic-weights(max_ratio=0.5)", `dynamic-weights: max_ratio: want a number in [1, 1e+06], got "0.5"`},
		{"unknown", "dynamic-weights(cpu=1)", `dynamic-weights: unknown parameter "cpu" (allowed: interval, smoothing, max_ratio)`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParse(t, tc.spec, tc.want) })
	}
}

func TestDynamicWeightsSample(t *testing.T) {
	const T = 1.0 // seconds
	for _, tc := range []struct {
		name   string
		counts dwCounts
		want   float64
		wantOK bool
	}{
		{"lone client: one over the latency", dwCounts{outcomes: 100, successes: 100, latency: 1}, 100, true},
		{"reported load above own occupancy", dwCounts{outcomes: 100, successes: 100, latency: 1, load: 500, loads: 100}, 20, true},
		{"reported load below own occupancy", dwCounts{outcomes: 100, successes: 100, latency: 1, load: 50, loads: 100}, 100, true},
		{"half failed", dwCounts{outcomes: 100, successes: 50, latency: 1}, 50, true},
		{"all failed", dwCounts{outcomes: 100, latency: 0.1}, 0, true},
		{"instant answers, no load", dwCounts{outcomes: 10, successes: 10}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := dwSample(tc.counts, T)
			if ok != tc.wantOK || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("dwSample = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// dwAnswer is how one endpoint answers in a scripted run: every request
// ends at once (the fake clock does not move between pick and done) with
// this outcome.
type dwAnswer = Outcome

// runDynamicWeights picks once per millisecond of the fake clock, answering
// each request with answers[ep], and returns the picks per endpoint in
// each whole second (the interval is 1s, and the first starts at the first
// pick).
func runDynamicWeights(t *testing.T, spec string, answers []dwAnswer, seconds int) [][]int {
	t.Helper()
	clock := newFakeClock()
	b := newChecked(t, spec, Env{N: len(answers), Rand: newRand(1), Clock: clock}, "")
	counts := make([][]int, seconds)
	for s := range counts {
		counts[s] = make([]int, len(answers))
		for range 1000 {
			ep, done := b.Pick(Request{})
			counts[s][ep]++
			done(answers[ep])
			clock.Advance(time.Millisecond)
		}
	}
	return counts
}

func TestDynamicWeightsScripted(t *testing.T) {
	ok := func(lat time.Duration) Outcome { return Outcome{Status: 200, Latency: lat} }
	for _, tc := range []struct {
		name    string
		spec    string
		answers []dwAnswer
		// picks per endpoint in each second; the first is round robin.
		want [][]int
	}{
		{
			name:    "twice as fast gets twice the requests",
			spec:    "dynamic-weights(interval=1s)",
			answers: []dwAnswer{ok(10 * time.Millisecond), ok(20 * time.Millisecond)},
			want:    [][]int{{500, 500}, {667, 333}, {667, 333}},
		},
		{
			name: "reported load (other clients' requests) lowers the weight",
			spec: "dynamic-weights(interval=1s,smoothing=1)",
			// In the first second 500 requests of 10 ms hold 5 on average;
			// endpoint 1 reports 20 held: a quarter of endpoint 0's weight.
			// Then endpoint 0 holds 8 (800 × 10 ms), weight 100; endpoint 1
			// still reports 20 for its 200: weight 10. The weights head for
			// equal occupancy, which endpoint 1's other clients exceed.
			answers: []dwAnswer{ok(10 * time.Millisecond), {Status: 200, Latency: 10 * time.Millisecond, Load: 20, HasLoad: true}},
			want:    [][]int{{500, 500}, {800, 200}, {909, 91}},
		},
		{
			name: "fast failures get the floor, not the speed",
			spec: "dynamic-weights(interval=1s)",
			// Weights 100 and 0, mean 50: the failing endpoint is raised
			// to 5, a twenty-first of the picks.
			answers: []dwAnswer{ok(10 * time.Millisecond), {Status: 503, Latency: time.Millisecond}},
			want:    [][]int{{500, 500}, {953, 47}, {953, 47}},
		},
		{
			name:    "max_ratio sets the floor",
			spec:    "dynamic-weights(interval=1s,max_ratio=2)",
			answers: []dwAnswer{ok(10 * time.Millisecond), {Status: 503, Latency: time.Millisecond}},
			// Mean 50, floor 25: one pick in five.
			want: [][]int{{500, 500}, {800, 200}},
		},
		{
			name: "smoothing: half the way to each new sample",
			spec: "dynamic-weights(interval=1s,smoothing=0.5)",
			// First sample 100:50 (2:1). In the second second endpoint 0
			// gets 667 requests of 10 ms: sample 100; endpoint 1 333 of 20
			// ms: sample 50. The weights stay at 2:1 once there.
			answers: []dwAnswer{ok(10 * time.Millisecond), ok(20 * time.Millisecond)},
			want:    [][]int{{500, 500}, {667, 333}, {667, 333}},
		},
		{
			name:    "equal endpoints stay round robin",
			spec:    "dynamic-weights(interval=1s)",
			answers: []dwAnswer{ok(5 * time.Millisecond), ok(5 * time.Millisecond), ok(5 * time.Millisecond), ok(5 * time.Millisecond)},
			want:    [][]int{{250, 250, 250, 250}, {250, 250, 250, 250}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runDynamicWeights(t, tc.spec, tc.answers, len(tc.want))
			for s := range tc.want {
				for ep := range tc.want[s] {
					if d := got[s][ep] - tc.want[s][ep]; d < -1 || d > 1 {
						t.Errorf("second %d: picks %v, want %v (±1)", s, got[s], tc.want[s])
						break
					}
				}
			}
		})
	}
}

// TestDynamicWeightsSmoothing checks the EWMA across intervals and that an
// interval without outcomes leaves a weight as it was.
func TestDynamicWeightsSmoothing(t *testing.T) {
	clock := newFakeClock()
	d := newDynamicWeights(2, clock, time.Second, 0.25, 10)
	hosts := []int{0, 1}
	feedPick(d, Request{}, hosts) // starts the first interval
	answer := func(ep int, n int, lat time.Duration) {
		for range n {
			d.dones[ep](Outcome{Status: 200, Latency: lat})
		}
	}
	answer(0, 100, 10*time.Millisecond) // sample 100
	answer(1, 100, 10*time.Millisecond) // sample 100
	clock.Advance(time.Second)
	d.Sweep(clock.Now())
	if want := []float64{100, 100}; !approxEqual(d.weight, want) {
		t.Fatalf("after the first interval: weights %v, want %v", d.weight, want)
	}
	answer(0, 100, 20*time.Millisecond) // sample 50: 100 + 0.25·(50−100)
	clock.Advance(time.Second)
	d.Sweep(clock.Now())
	if want := []float64{87.5, 100}; !approxEqual(d.weight, want) {
		t.Fatalf("after the second interval: weights %v, want %v", d.weight, want)
	}
	if want := []float64{87.5, 100}; !approxEqual(d.eff, want) {
		t.Fatalf("effective weights %v, want %v", d.eff, want)
	}
	// Three empty intervals, then a done: it ticks first and counts in the
	// new interval.
	clock.Advance(3500 * time.Millisecond)
	answer(1, 100, 40*time.Millisecond) // sample 25, counted in [5s, 6s)
	if want := []float64{87.5, 100}; !approxEqual(d.weight, want) {
		t.Fatalf("after empty intervals: weights %v, want %v", d.weight, want)
	}
	clock.Advance(500 * time.Millisecond)
	d.Sweep(clock.Now())
	if want := []float64{87.5, 81.25}; !approxEqual(d.weight, want) {
		t.Fatalf("after the interval of the late done: weights %v, want %v", d.weight, want)
	}
}

// TestDynamicWeightsHostOrder: the picks do not depend on the order of the
// hosts, and a host that is not given neither gains nor loses its turn.
func TestDynamicWeightsHostOrder(t *testing.T) {
	answers := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 20 * time.Millisecond}
	run := func(order func(i int, hosts []int) []int) []int {
		clock := newFakeClock()
		d := newDynamicWeights(len(answers), clock, time.Second, 0.5, 10)
		var picks []int
		for i := range 5000 {
			hosts := []int{0, 1, 2, 3}
			if i%7 == 3 {
				hosts = []int{0, 2, 3} // 1 left for this pick
			}
			ep, done := d.Pick(Request{}, order(i, hosts))
			picks = append(picks, ep)
			done(Outcome{Status: 200, Latency: answers[ep]})
			clock.Advance(time.Millisecond)
		}
		return picks
	}
	asc := run(func(_ int, h []int) []int { return h })
	r := newRand(5)
	shuffled := run(func(_ int, h []int) []int {
		r.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		return h
	})
	if !slices.Equal(asc, shuffled) {
		for i := range asc {
			if asc[i] != shuffled[i] {
				t.Fatalf("pick %d: %d with ascending hosts, %d with shuffled hosts", i, asc[i], shuffled[i])
			}
		}
	}
	// The weights settle at 1/latency: 100, 50, 25, 50.
	counts := make([]int, 4)
	for _, ep := range asc[4000:] {
		counts[ep]++
	}
	r02, r32 := float64(counts[0])/float64(counts[2]), float64(counts[3])/float64(counts[2])
	if r02 < 3.4 || r02 > 4.6 || r32 < 1.7 || r32 > 2.3 || counts[1] > counts[3] {
		t.Errorf("last second's picks %v, want about 100:50:25:50, a little less for 1 (left out of every seventh pick)", counts)
	}
}

// TestDynamicWeightsInflightReturns drives Balancer picks with dones in a
// seeded random order: the in-flight counts return to zero and every pick
// is a given host.
func TestDynamicWeightsInflightReturns(t *testing.T) {
	clock := newFakeClock()
	b := newChecked(t, "dynamic-weights(interval=100ms)", Env{N: 7, Rand: newRand(1), Clock: clock}, "")
	r := newRand(9)
	var open []func(Outcome)
	for range 20000 {
		clock.Advance(time.Duration(r.IntN(200)) * time.Microsecond)
		ep, done := b.Pick(Request{})
		if ep < 0 || ep >= 7 {
			t.Fatalf("picked %d", ep)
		}
		open = append(open, done)
		for len(open) > 0 && r.IntN(2) == 0 {
			k := r.IntN(len(open))
			open[k](Outcome{Status: 200, Latency: time.Duration(1+r.IntN(20)) * time.Millisecond, Load: float64(r.IntN(10)), HasLoad: r.IntN(2) == 0})
			open = slices.Delete(open, k, k+1)
		}
	}
	for _, done := range open {
		done(ok200)
	}
	for ep, v := range b.InFlight() {
		if v != 0 {
			t.Errorf("endpoint %d: %d in flight after every done", ep, v)
		}
	}
}

// approxEqual reports whether a and b are equal to within 1e-9 relative.
func approxEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(math.Abs(x), math.Abs(y)) })
}

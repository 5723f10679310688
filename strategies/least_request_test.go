package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeastRequestParams(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		choices  int
		bias     float64
		fullScan bool
	}{
		{"defaults", "least-request", 2, 1, false},
		{"empty parentheses", "least-request()", 2, 1, false},
		{"every parameter", "least-request(choice_count=3, active_request_bias=0.5, full_scan=true)", 3, 0.5, true},
		{"one choice", "least-request(choice_count=1)", 1, 1, false},
		{"bias bounds", "least-request(active_request_bias=0)", 2, 0, false},
		{"bias upper bound", "least-request(active_request_bias=10)", 2, 10, false},
		{"full scan off", "least-request(full_scan=off)", 2, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.spec, Env{N: 3, Rand: newRand(1)})
			if err != nil {
				t.Fatalf("New(%q): %v", tt.spec, err)
			}
			l, ok := b.picker.(*leastRequest)
			if !ok {
				t.Fatalf("New(%q) built %T, want *leastRequest", tt.spec, b.picker)
			}
			if l.choices != tt.choices || l.bias != tt.bias || l.fullScan != tt.fullScan {
				t.Errorf("New(%q): choice_count=%d active_request_bias=%v full_scan=%v, want %d %v %v",
					tt.spec, l.choices, l.bias, l.fullScan, tt.choices, tt.bias, tt.fullScan)
			}
		})
	}
}

func TestLeastRequestParamErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
	}{
		{"zero choices", "least-request(choice_count=0)", `least-request: choice_count: want an integer >= 1, got "0"`},
		{"negative choices", "least-request(choice_count=-2)", `least-request: choice_count: want an integer >= 1, got "-2"`},
		{"fractional choices", "least-request(choice_count=1.5)", `least-request: choice_count: want an integer >= 1, got "1.5"`},
		{"negative bias", "least-request(active_request_bias=-0.5)", `least-request: active_request_bias: want a number in [0, 10], got "-0.5"`},
		{"bias too large", "least-request(active_request_bias=11)", `least-request: active_request_bias: want a number in [0, 10], got "11"`},
		{"bias NaN", "least-request(active_request_bias=NaN)", `least-request: active_request_bias: want a number in [0, 10], got "NaN"`},
		{"bias infinite", "least-request(active_request_bias=Inf)", `least-request: active_request_bias: want a number in [0, 10], got "Inf"`},
		{"full scan not a bool", "least-request(full_scan=maybe)", `least-request: full_scan: want true or false, got "maybe"`},
		{"unknown parameter", "least-request(choices=2)", `least-request: unknown parameter "choices" (allowed: choice_count, active_request_bias, full_scan)`},
		{"duplicate parameter", "least-request(choice_count=2,choice_count=3)", `least-request: duplicate parameter "choice_count"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := Parse(tt.spec); err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q) = %+v, %v; want error %s", tt.spec, s, err, tt.want)
			}
			if b, err := New(tt.spec, Env{N: 2, Rand: newRand(1)}); err == nil || err.Error() != tt.want {
				t.Errorf("New(%q) = %v, %v; want error %s", tt.spec, b, err, tt.want)
			}
		})
	}
	got, err := Parse("least-request( full_scan = true , choice_count=4 )+eject")
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Base: "least-request", BaseParams: map[string]string{"full_scan": "true", "choice_count": "4"}, Wrappers: []WrapperSpec{{Name: "eject"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

// wtChoiceShares returns the probability of each host (by index of loads)
// being picked by the least loaded of k draws with replacement: the tied
// group of a host with load l wins when every draw has a load >= l and
// not every draw a load > l, and its members share that by symmetry.
func wtChoiceShares(loads []int64, k int) []float64 {
	n := float64(len(loads))
	shares := make([]float64, len(loads))
	for i, l := range loads {
		var atLeast, above, tied float64
		for _, m := range loads {
			switch {
			case m > l:
				above++
				atLeast++
			case m == l:
				tied++
				atLeast++
			}
		}
		shares[i] = (math.Pow(atLeast/n, float64(k)) - math.Pow(above/n, float64(k))) / tied
	}
	return shares
}

// wtLeastRequestCounts picks n times from hosts with the given in-flight
// counts (by endpoint id), reporting each pick at once, and returns the
// picks per endpoint.
func wtLeastRequestCounts(l *leastRequest, hosts []int, n int) []int {
	counts := make([]int, len(l.inflight))
	for range n {
		ep, done := feedPick(l, Request{}, hosts)
		done(ok200)
		counts[ep]++
	}
	return counts
}

func TestLeastRequestChoices(t *testing.T) {
	tests := []struct {
		name     string
		inflight []int64 // by endpoint id
		choices  int
		want     []float64
	}{
		{"two hosts, two choices: the busier gets a quarter", []int64{0, 5}, 2, []float64{0.75, 0.25}},
		{"two hosts, the busier first", []int64{5, 0}, 2, []float64{0.25, 0.75}},
		{"one choice is uniform", []int64{0, 3, 9}, 1, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"three choices", []int64{0, 1, 2, 3}, 3, []float64{37.0 / 64, 19.0 / 64, 7.0 / 64, 1.0 / 64}},
		{"three choices, loads shuffled", []int64{2, 0, 3, 1}, 3, []float64{7.0 / 64, 37.0 / 64, 1.0 / 64, 19.0 / 64}},
		{"two choices with a tie for least", []int64{1, 1, 4}, 2, []float64{4.0 / 9, 4.0 / 9, 1.0 / 9}},
		{"equal loads", []int64{2, 2, 2, 2, 2}, 2, []float64{0.2, 0.2, 0.2, 0.2, 0.2}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, wtChoiceShares(tt.inflight, tt.choices), cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
			t.Fatalf("%s: the formula disagrees with the table (-table +formula):\n%s", tt.name, diff)
		}
		for order, hosts := range hostOrders(seq(len(tt.inflight))) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				l := newLeastRequest(newRand(21), tt.inflight, slices.Repeat([]float64{1}, len(tt.inflight)), tt.choices, 1, false)
				wtCheckShares(t, wtLeastRequestCounts(l, hosts, 100_000), tt.want, wtCritical001)
			})
		}
	}
}

func TestLeastRequestChoicesEveryOrder(t *testing.T) {
	// Loads {0, 1, 1, 3} in all 24 orders, on the hosts in three orders,
	// with 1, 2 and 3 choices.
	for _, choices := range []int{1, 2, 3} {
		for _, inflight := range wtPermutations([]int64{0, 1, 1, 3}) {
			want := wtChoiceShares(inflight, choices)
			for order, hosts := range hostOrders(seq(4)) {
				t.Run(fmt.Sprintf("choice_count=%d/loads=%v/%s", choices, inflight, order), func(t *testing.T) {
					l := newLeastRequest(newRand(uint64(choices)), inflight, []float64{1, 1, 1, 1}, choices, 1, false)
					wtCheckShares(t, wtLeastRequestCounts(l, hosts, 20_000), want, wtCritical1e6)
				})
			}
		}
	}
}

func TestLeastRequestFullScan(t *testing.T) {
	tests := []struct {
		name     string
		inflight []int64 // by endpoint id
		hosts    []int   // nil: every endpoint
		want     []int   // the hosts with the fewest in flight
	}{
		{"unique least", []int64{3, 1, 2}, nil, []int{1}},
		{"least last", []int64{5, 4, 3, 2, 1, 0}, nil, []int{5}},
		{"ties", []int64{2, 0, 3, 0, 0, 5}, nil, []int{1, 3, 4}},
		{"all equal", []int64{4, 4, 4, 4}, nil, []int{0, 1, 2, 3}},
		{"subset without the global least", []int64{0, 6, 2, 2, 9}, []int{1, 2, 3, 4}, []int{2, 3}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(len(tt.inflight))
		}
		for _, ordered := range wtPermutations(hosts) {
			t.Run(fmt.Sprintf("%s/hosts=%v", tt.name, ordered), func(t *testing.T) {
				l := newLeastRequest(newRand(5), tt.inflight, slices.Repeat([]float64{1}, len(tt.inflight)), 2, 1, true)
				counts := wtLeastRequestCounts(l, ordered, 3_000*len(tt.want))
				want := make([]float64, len(tt.inflight))
				for _, h := range tt.want {
					want[h] = 1 / float64(len(tt.want))
				}
				wtCheckShares(t, counts, want, wtCritical1e6)
			})
		}
	}
}

func TestLeastRequestFullScanEveryLoadOrder(t *testing.T) {
	// Loads {2, 0, 0, 3} in every order and the hosts in three orders:
	// only the two idle hosts are picked, half the time each.
	for _, inflight := range wtPermutations([]int64{2, 0, 0, 3}) {
		want := make([]float64, 4)
		for h, n := range inflight {
			if n == 0 {
				want[h] = 0.5
			}
		}
		for order, hosts := range hostOrders(seq(4)) {
			t.Run(fmt.Sprintf("loads=%v/%s", inflight, order), func(t *testing.T) {
				l := newLeastRequest(newRand(9), inflight, []float64{1, 1, 1, 1}, 2, 1, true)
				wtCheckShares(t, wtLeastRequestCounts(l, hosts, 4_000), want, wtCritical1e6)
			})
		}
	}
}

func TestLeastRequestDraws(t *testing.T) {
	// Random numbers drawn per pick: choice_count with equal weights, none
	// for a full scan without a tie, one with a tie, none for the schedule.
	tests := []struct {
		name     string
		spec     string
		weights  []float64
		inflight []int64 // held open before counting
		want     int
	}{
		{"one choice", "least-request(choice_count=1)", nil, nil, 1},
		{"two choices", "least-request", nil, nil, 2},
		{"five choices", "least-request(choice_count=5)", nil, nil, 5},
		{"full scan with ties", "least-request(full_scan=true)", nil, nil, 1},
		{"full scan, unique least", "least-request(full_scan=true)", nil, []int64{3, 3, 0, 3}, 0},
		{"schedule", "least-request", []float64{1, 2, 3, 4}, nil, 0},
		{"schedule, bias 0", "least-request(active_request_bias=0)", []float64{1, 2, 3, 4}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &wtCountingSource{src: rand.NewPCG(3, 4)}
			b, err := New(tt.spec, Env{N: 4, Rand: rand.New(src), Weights: tt.weights})
			if err != nil {
				t.Fatal(err)
			}
			l := b.picker.(*leastRequest)
			if tt.inflight != nil {
				// In-flight counts set directly: only Pick reads them.
				copy(l.inflight, tt.inflight)
			}
			for i := range 200 {
				before := src.draws
				_, done := feedPick(l, Request{}, b.hosts)
				done(ok200)
				if d := src.draws - before; d != tt.want {
					t.Fatalf("pick %d drew %d numbers, want %d", i, d, tt.want)
				}
			}
		})
	}
}

func TestLeastRequestScheduleSequence(t *testing.T) {
	// Weights {4, 2, 1} with bias 0 (the load does not matter): deadlines
	// 1/4, 1/2 and 1 apart. Ties go to the host scheduled first, then to
	// the lowest id.
	want := []int{0, 1, 0, 0, 2, 1, 0, 0, 1, 0, 0, 2, 1, 0}
	for _, hosts := range wtPermutations(seq(3)) {
		for _, inflight := range [][]int64{{0, 0, 0}, {5, 0, 9}} {
			t.Run(fmt.Sprintf("hosts=%v/inflight=%v", hosts, inflight), func(t *testing.T) {
				l := newLeastRequest(newRand(1), inflight, []float64{4, 2, 1}, 2, 0, false)
				if got := wtPicks(l, hosts, len(want)); !slices.Equal(got, want) {
					t.Errorf("picks %v, want %v", got, want)
				}
			})
		}
	}
	// Moving the weights moves the sequence with them.
	for _, hosts := range wtPermutations(seq(3)) {
		t.Run(fmt.Sprintf("weights moved/hosts=%v", hosts), func(t *testing.T) {
			l := newLeastRequest(newRand(1), make([]int64, 3), []float64{1, 4, 2}, 2, 0, false)
			if got, want := wtPicks(l, hosts, 7), []int{1, 2, 1, 1, 0, 2, 1}; !slices.Equal(got, want) {
				t.Errorf("picks %v, want %v", got, want)
			}
		})
	}
}

func TestLeastRequestScheduleInFlight(t *testing.T) {
	// Weights {2, 1}, bias 1, through the Balancer, which counts the
	// requests in flight. Each pick moves the picked host's deadline by
	// (its in flight before the pick + 1) / weight; dones move nothing.
	type action struct {
		done     int       // >= 0: report the request of that pick (1-based); 0: pick
		want     int       // the pick
		deadline []float64 // after the pick, by endpoint id
	}
	script := []action{
		{want: 0, deadline: []float64{1, 1}},   // now 0.5, 0 in flight: +1/2
		{want: 1, deadline: []float64{1, 2}},   // tie at 1: 1 was scheduled first
		{want: 0, deadline: []float64{2, 2}},   // 1 in flight: +2/2
		{want: 1, deadline: []float64{2, 4}},   // tie at 2; 1 in flight: +2/1
		{want: 0, deadline: []float64{3.5, 4}}, // 2 in flight: +3/2
		{done: 1}, {done: 3}, {done: 5},        // 0 has none in flight
		{want: 0, deadline: []float64{4, 4}},        // +1/2
		{want: 1, deadline: []float64{4, 7}},        // tie at 4; 2 in flight: +3
		{want: 0, deadline: []float64{5, 7}},        // 1 in flight: +1
		{want: 0, deadline: []float64{6.5, 7}},      // 2 in flight: +3/2
		{want: 0, deadline: []float64{8.5, 7}},      // 3 in flight: +2
		{want: 1, deadline: []float64{8.5, 11}},     // 3 in flight: +4
		{done: 2}, {done: 4}, {done: 7}, {done: 11}, // 1 has none in flight
		{want: 0, deadline: []float64{11, 11}}, // 4 in flight: +5/2
		{want: 1, deadline: []float64{11, 12}}, // tie at 11; 0 in flight: +1
		{want: 0, deadline: []float64{14, 12}}, // 5 in flight: +6/2
	}
	b, err := New("least-request", Env{N: 2, Rand: newRand(1), Weights: []float64{2, 1}})
	if err != nil {
		t.Fatal(err)
	}
	l := b.picker.(*leastRequest)
	var dones []func(Outcome)
	for i, a := range script {
		if a.done > 0 {
			dones[a.done-1](ok200)
			continue
		}
		ep, done := b.Pick(Request{})
		dones = append(dones, done)
		if ep != a.want {
			t.Fatalf("step %d (pick %d): picked %d, want %d; in flight %v, deadlines %v", i, len(dones), ep, a.want, b.InFlight(), l.deadline)
		}
		for h, d := range a.deadline {
			if math.Abs(l.deadline[h]-d) > 1e-9 {
				t.Fatalf("step %d (pick %d): deadlines %v, want %v", i, len(dones), l.deadline, a.deadline)
			}
		}
	}
	if got, want := b.InFlight(), []int64{6, 1}; !slices.Equal(got, want) {
		t.Errorf("InFlight() = %v, want %v", got, want)
	}
}

func TestLeastRequestScheduleHostChanges(t *testing.T) {
	// Each step gives the host set (UpdateHosts when it changes), the pick
	// (-1: any of the hosts) and the virtual time and deadlines of the
	// scheduled hosts after it; bias 0.
	type step struct {
		hosts    []int
		want     int
		now      float64
		deadline map[int]float64 // exactly the scheduled hosts
	}
	tests := []struct {
		name    string
		weights []float64
		steps   []step
	}{
		{"hosts that stay keep their deadlines", []float64{4, 2, 1}, []step{
			{[]int{0, 1, 2}, 0, 0.25, map[int]float64{0: 0.5, 1: 0.5, 2: 1}},
			{[]int{0, 1, 2}, 1, 0.5, map[int]float64{0: 0.5, 1: 1, 2: 1}},
			{[]int{0, 1, 2}, 0, 0.5, map[int]float64{0: 0.75, 1: 1, 2: 1}},
			// 0 leaves; 2 was scheduled before 1's latest pick.
			{[]int{1, 2}, 2, 1, map[int]float64{1: 1, 2: 2}},
			{[]int{1, 2}, 1, 1, map[int]float64{1: 1.5, 2: 2}},
			// 0 returns, scheduled 1/4 from now.
			{[]int{0, 1, 2}, 0, 1.25, map[int]float64{0: 1.5, 1: 1.5, 2: 2}},
			{[]int{0, 1, 2}, 1, 1.5, map[int]float64{0: 1.5, 1: 2, 2: 2}},
			{[]int{0, 1, 2}, 0, 1.5, map[int]float64{0: 1.75, 1: 2, 2: 2}},
			{[]int{0, 1, 2}, 0, 1.75, map[int]float64{0: 2, 1: 2, 2: 2}},
			{[]int{0, 1, 2}, 2, 2, map[int]float64{0: 2, 1: 2, 2: 3}},
		}},
		{"equal weights left switch to random draws", []float64{4, 2, 2}, []step{
			{[]int{0, 1, 2}, 0, 0.25, map[int]float64{0: 0.5, 1: 0.5, 2: 0.5}},
			{[]int{0, 1, 2}, 1, 0.5, map[int]float64{0: 0.5, 1: 1, 2: 0.5}},
			{[]int{0, 1, 2}, 2, 0.5, map[int]float64{0: 0.5, 1: 1, 2: 1}},
			{[]int{1, 2}, -1, 0.5, map[int]float64{}},
			{[]int{1, 2}, -1, 0.5, map[int]float64{}},
			// Back to unequal weights: all scheduled afresh from now.
			{[]int{0, 1, 2}, 0, 0.75, map[int]float64{0: 1, 1: 1, 2: 1}},
			{[]int{0, 1, 2}, 1, 1, map[int]float64{0: 1, 1: 1.5, 2: 1}},
			{[]int{0, 1, 2}, 2, 1, map[int]float64{0: 1, 1: 1.5, 2: 1.5}},
			{[]int{0, 1, 2}, 0, 1, map[int]float64{0: 1.25, 1: 1.5, 2: 1.5}},
		}},
		{"single host is not scheduled", []float64{1, 3}, []step{
			{[]int{0, 1}, 1, 1.0 / 3, map[int]float64{0: 1, 1: 2.0 / 3}},
			{[]int{0}, 0, 1.0 / 3, map[int]float64{}},
			{[]int{0}, 0, 1.0 / 3, map[int]float64{}},
			{[]int{0, 1}, 1, 2.0 / 3, map[int]float64{0: 4.0 / 3, 1: 1}},
		}},
	}
	for _, tt := range tests {
		for _, order := range []string{"ascending", "descending", "shuffled"} {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				l := newLeastRequest(newRand(2), make([]int64, len(tt.weights)), tt.weights, 2, 0, false)
				var hosts []int
				for i, s := range tt.steps {
					if !slices.Equal(slices.Sorted(slices.Values(hosts)), s.hosts) {
						hosts = hostOrders(s.hosts)[order]
					}
					ep, done := feedPick(l, Request{}, hosts)
					done(ok200)
					if s.want >= 0 && ep != s.want || !slices.Contains(hosts, ep) {
						t.Fatalf("step %d, hosts %v: picked %d, want %d", i, hosts, ep, s.want)
					}
					scheduled := map[int]float64{}
					for _, h := range l.heap {
						scheduled[h] = l.deadline[h]
					}
					for h, q := range l.queued {
						if q != slices.Contains(l.heap, h) {
							t.Fatalf("step %d: queued[%d]=%v but heap %v", i, h, q, l.heap)
						}
					}
					approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })
					if math.Abs(l.now-s.now) > 1e-12 || !cmp.Equal(scheduled, s.deadline, approx) {
						t.Fatalf("step %d, hosts %v: now %v, deadlines %v; want %v, %v", i, hosts, l.now, scheduled, s.now, s.deadline)
					}
				}
			})
		}
	}
}

func TestLeastRequestScheduleShares(t *testing.T) {
	// Requests that end at once leave only the weights: over a whole
	// period each host gets its weight in picks, whatever the bias.
	weights := []float64{1, 2, 3, 4}
	for _, spec := range []string{"least-request", "least-request(active_request_bias=0)", "least-request(active_request_bias=3.5)"} {
		t.Run(spec, func(t *testing.T) {
			b, err := New(spec, Env{N: 4, Rand: newRand(1), Weights: weights})
			if err != nil {
				t.Fatal(err)
			}
			for period := range 10 {
				counts := make([]int, 4)
				for range 10 {
					ep, done := b.Pick(Request{})
					done(ok200)
					counts[ep]++
				}
				if !slices.Equal(counts, []int{1, 2, 3, 4}) {
					t.Fatalf("period %d: counts %v, want the weights %v", period, counts, weights)
				}
			}
		})
	}
}

func TestLeastRequestScheduleDrainsBusyHost(t *testing.T) {
	// Endpoint 0, twice the weight of the others, never finishes its
	// requests; the others finish theirs at once, so each of them is picked
	// once per unit of virtual time. With k requests held, endpoint 0's
	// next deadline is (k+1)^bias / 2 later: with bias 0 it keeps half the
	// picks; with bias 1 its k-th pick comes at about k^2/4, so 1000 picks
	// hold about k^2/2 + k of the others' and k of its own, k = 43; with
	// bias 2 at about k^3/6, k^3/3 + k = 1000, k = 14. It never drops out.
	tests := []struct {
		spec     string
		min, max int // picks of endpoint 0 among 1000
	}{
		{"least-request(active_request_bias=0)", 500, 500},
		{"least-request", 41, 45},
		{"least-request(active_request_bias=2)", 13, 16},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b, err := New(tt.spec, Env{N: 3, Rand: newRand(1), Weights: []float64{2, 1, 1}})
			if err != nil {
				t.Fatal(err)
			}
			var held []func(Outcome)
			for range 1000 {
				ep, done := b.Pick(Request{})
				if ep == 0 {
					held = append(held, done)
				} else {
					done(ok200)
				}
			}
			if n := len(held); n < tt.min || n > tt.max {
				t.Errorf("endpoint 0 picked %d times of 1000, want %d to %d", n, tt.min, tt.max)
			}
			for _, done := range held {
				done(ok200)
			}
		})
	}
}

func TestLeastRequestFullScanThroughBalancer(t *testing.T) {
	b, err := New("least-request(full_scan=true)", Env{N: 4, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	// Holding every request open, picks fill the endpoints evenly.
	var dones []func(Outcome)
	for round := int64(1); round <= 3; round++ {
		for range 4 {
			_, done := b.Pick(Request{})
			dones = append(dones, done)
		}
		if got, want := b.InFlight(), []int64{round, round, round, round}; !slices.Equal(got, want) {
			t.Fatalf("round %d: InFlight() = %v, want %v", round, got, want)
		}
	}
	for _, done := range dones {
		done(ok200)
	}
}

package strategies

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "fastest-response", "fastest-response(window=100)")
}

func TestFastestResponseParams(t *testing.T) {
	tests := []struct {
		spec    string
		window  int
		wantErr string // "" for none
	}{
		{"fastest-response", 10, ""},
		{"fastest-response()", 10, ""},
		{"fastest-response(window=1)", 1, ""},
		{"fastest-response(window=10000)", 10000, ""},
		{"fastest-response(window=0)", 0, `fastest-response: window: want an integer >= 1, got "0"`},
		{"fastest-response(window=-3)", 0, `fastest-response: window: want an integer >= 1, got "-3"`},
		{"fastest-response(window=ten)", 0, `fastest-response: window: want an integer >= 1, got "ten"`},
		{"fastest-response(window=10001)", 0, `fastest-response: window: want an integer from 1 to 10000, got 10001`},
		{"fastest-response(size=3)", 0, `fastest-response: unknown parameter "size" (allowed: window)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b := newChecked(t, tt.spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}, tt.wantErr)
			if b == nil {
				return
			}
			f := b.picker.(*fastestResponse)
			if f.window != tt.window || len(f.samples) != 3*tt.window {
				t.Errorf("window %d with %d samples, want %d with %d", f.window, len(f.samples), tt.window, 3*tt.window)
			}
		})
	}
}

// TestFastestResponseAverage feeds one endpoint's window and checks its
// average after each sample: the oldest sample leaves a full window, and
// negative latencies count as 0.
func TestFastestResponseAverage(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		window  int
		samples []time.Duration
		want    []float64 // average in milliseconds after each sample
	}{
		{"window 1 keeps the latest", 1, []time.Duration{10 * ms, 30 * ms, 2 * ms}, []float64{10, 30, 2}},
		{"filling then sliding", 3, []time.Duration{10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms, 60 * ms, 0},
			[]float64{10, 15, 20, 30, 40, 50, 110.0 / 3}},
		{"negative latency counts as zero", 2, []time.Duration{-5 * ms, 8 * ms, -1}, []float64{0, 4, 4}},
		{"huge latency is capped", 2, []time.Duration{1 << 62, 1 << 62}, []float64{float64(fastestMaxSample) / 1e6, float64(fastestMaxSample) / 1e6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFastestResponse(2, tt.window, newRand(1))
			if got := f.average(0); got != 0 {
				t.Fatalf("average before any sample = %v, want 0", got)
			}
			for i, d := range tt.samples {
				f.dones[0](Outcome{Status: 200, Latency: d})
				if got := f.average(0) / 1e6; !closeTo(got, tt.want[i]) {
					t.Errorf("after sample %d (%v): average %vms, want %vms", i, d, got, tt.want[i])
				}
			}
			if f.average(1) != 0 || f.hosts[1].count != 0 {
				t.Errorf("endpoint 1 was touched: %+v", f.hosts[1])
			}
		})
	}
}

func closeTo(a, b float64) bool {
	d := a - b
	return d < 1e-9*max(1, b) && d > -1e-9*max(1, b)
}

// TestFastestResponseSelection checks which hosts a pick takes for given
// averages, with the averages assigned to the hosts in every way and the
// hosts passed in several orders; ties must be shared uniformly.
func TestFastestResponseSelection(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		hosts []int
		loads []float64 // averages in milliseconds, one per host state; -1: no sample
	}{
		{"one fastest", 4, []int{0, 1, 2, 3}, []float64{10, 11, 12, 30}},
		{"two tied fastest", 4, []int{0, 1, 2, 3}, []float64{10, 10, 12, 30}},
		{"all tied", 3, []int{0, 1, 2}, []float64{10, 10, 10}},
		{"unmeasured hosts are tried first", 4, []int{0, 1, 2, 3}, []float64{-1, -1, 1, 2}},
		{"subset without the global fastest", 5, []int{1, 3, 4}, []float64{7, 7.5, 20}},
		{"single host", 3, []int{2}, []float64{50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := make([]float64, len(tt.loads))
			for i, l := range tt.loads {
				exp[i] = max(l, 0)
			}
			sampledSelection(t, tt.n, tt.hosts, exp, 0, 6000, func(stateOf []int, r *rand.Rand) Picker {
				f := newFastestResponse(tt.n, 3, r)
				for ep, s := range stateOf {
					// Endpoints outside hosts get the fastest window of all.
					l := 0.001
					if s >= 0 {
						l = tt.loads[s]
					}
					if l < 0 {
						continue
					}
					// Three samples around the average: only the mean counts.
					d := time.Duration(l * 1e6)
					for _, x := range []time.Duration{d - 100, d + 300, d - 200} {
						f.dones[ep](Outcome{Status: 200, Latency: x})
					}
				}
				return f
			})
		})
	}
}

// TestFastestResponseScripted feeds outcomes in order and checks after each
// which hosts the next picks take.
func TestFastestResponseScripted(t *testing.T) {
	ms := time.Millisecond
	ok := func(d time.Duration) Outcome { return Outcome{Status: 200, Latency: d} }
	steps := []struct {
		ep      int // -1: no outcome, just picks
		outcome Outcome
		want    []int // the hosts the next picks take, each of them
	}{
		{-1, Outcome{}, []int{0, 1, 2}}, // nothing measured: all tied at 0
		{0, ok(10 * ms), []int{1, 2}},   // 0 averages 10ms, the others 0
		{1, ok(12 * ms), []int{2}},
		{2, ok(11 * ms), []int{0}},                                    // 10 < 11 < 12
		{0, ok(14 * ms), []int{2}},                                    // 0: [10 14] = 12
		{0, ok(12 * ms), []int{2}},                                    // 0: [10 14 12] = 12
		{0, ok(4 * ms), []int{0}},                                     // 0: [14 12 4] = 10, the 10 left the window
		{2, ok(9 * ms), []int{0, 2}},                                  // 2: [11 9] = 10
		{1, ok(8 * ms), []int{0, 1, 2}},                               // 1: [12 8] = 10
		{1, Outcome{Status: 503, Latency: ms}, []int{1}},              // failures count: 1: [12 8 1] = 7
		{0, ok(-5 * ms), []int{0}},                                    // 0: [12 4 0] = 5.33
		{0, ok(30 * ms), []int{1}},                                    // 0: [4 0 30] = 11.33
		{1, Outcome{Timeout: true, Latency: 30 * ms}, []int{2}},       // 1: [8 1 30] = 13
		{2, Outcome{Err: errors.New("connection refused")}, []int{2}}, // 2: [11 9 0] = 6.67
	}
	f := newFastestResponse(3, 3, newRand(3))
	hosts := []int{0, 1, 2}
	for i, s := range steps {
		if s.ep >= 0 {
			f.dones[s.ep](s.outcome)
		}
		seen := map[int]int{}
		for range 300 {
			// The done of these picks is not called: fastest-response
			// learns only from the outcomes the script feeds.
			ep, _ := f.Pick(Request{}, hosts)
			seen[ep]++
		}
		for ep, n := range seen {
			if !slices.Contains(s.want, ep) {
				t.Errorf("step %d: picked %d (%d of 300), want only %v", i, ep, n, s.want)
			}
		}
		for _, ep := range s.want {
			if seen[ep] == 0 {
				t.Errorf("step %d: never picked %d of %v in 300 picks", i, ep, s.want)
			}
		}
	}
}

// TestFastestResponsePilesUp checks the trap: requests in flight do not
// count, so every pick goes to the fastest host until its answers come back
// slower, and then every pick goes to the next fastest.
func TestFastestResponsePilesUp(t *testing.T) {
	b := newChecked(t, "fastest-response", Env{N: 4, Rand: newRand(5), Clock: newFakeClock()}, "")
	f := b.picker.(*fastestResponse)
	for ep, d := range []time.Duration{10, 9, 11, 12} {
		for range 10 {
			f.dones[ep](Outcome{Status: 200, Latency: d * time.Millisecond})
		}
	}
	var dones []func(Outcome)
	for range 500 {
		ep, done := b.Pick(Request{})
		if ep != 1 {
			t.Fatalf("pick %d went to %d with %d in flight on 1; want 1, the fastest", len(dones), ep, b.InFlight()[1])
		}
		dones = append(dones, done)
	}
	// The pile-up overloads 1: its answers come back at 50ms.
	for _, done := range dones {
		done(Outcome{Status: 200, Latency: 50 * time.Millisecond})
	}
	if got := b.InFlight()[1]; got != 0 {
		t.Fatalf("in flight on 1 after every done = %d, want 0", got)
	}
	dones = dones[:0]
	for range 100 {
		ep, done := b.Pick(Request{})
		dones = append(dones, done)
		if ep != 0 {
			t.Errorf("after 1 slowed down picked %d, want 0 (10ms, now the fastest)", ep)
			break
		}
	}
	for _, done := range dones {
		done(Outcome{Status: 200, Latency: 10 * time.Millisecond})
	}
}

// TestFastestResponseHostsChange checks that a host that leaves keeps its
// window and that a host never measured is tried first.
func TestFastestResponseHostsChange(t *testing.T) {
	f := newFastestResponse(4, 2, newRand(9))
	for ep, d := range []time.Duration{5, 3, 8} {
		f.dones[ep](Outcome{Status: 200, Latency: d * time.Millisecond})
	}
	for _, tc := range []struct {
		hosts []int
		want  int
	}{
		{[]int{0, 1, 2}, 1},
		{[]int{0, 2}, 0},
		{[]int{0, 2, 3}, 3}, // 3 joins unmeasured
		{[]int{0, 1, 2}, 1}, // 1 came back with its window
	} {
		for order, hosts := range hostOrders(tc.hosts) {
			if ep, _ := f.Pick(Request{}, hosts); ep != tc.want {
				t.Errorf("hosts %v (%s): picked %d, want %d", hosts, order, ep, tc.want)
			}
		}
	}
}

func ExampleBalancer_fastestResponse() {
	b, err := New("fastest-response(window=2)", Env{N: 2, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		panic(err)
	}
	// Answer the first pick of each endpoint: 0 in 20ms, 1 in 30ms.
	seen := map[int]bool{}
	for len(seen) < 2 {
		ep, done := b.Pick(Request{})
		seen[ep] = true
		done(Outcome{Status: 200, Latency: time.Duration(20+10*ep) * time.Millisecond})
	}
	ep, done := b.Pick(Request{})
	done(Outcome{Status: 200, Latency: 20 * time.Millisecond})
	fmt.Println("fastest:", ep)
	// Output: fastest: 0
}

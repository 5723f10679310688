package strategies

import (
	"slices"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "predictive-least-conn")
}

func TestPredictiveLeastConnParams(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"predictive-least-conn", ""},
		{"predictive-least-conn(horizon=2s,interval=100ms,window=10)", ""},
		{"predictive-least-conn(horizon=0s)", `predictive-least-conn: horizon: want a duration > 0, got "0s"`},
		{"predictive-least-conn(interval=soon)", `predictive-least-conn: interval: want a duration like "5s", got "soon"`},
		{"predictive-least-conn(window=1)", `predictive-least-conn: window: want an integer >= 2, got "1"`},
		{"predictive-least-conn(window=5000)", `predictive-least-conn: window: want an integer within [2, 1000], got 5000`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) { checkParse(t, tt.spec, tt.want) })
	}
}

// TestPredictiveLeastConn drives the picker period by period: at each
// step the in-flight counts are set, the clock moves one interval (100 ms)
// and a Pick closes the period with those counts as its sample. The last
// step's counts are the counts now. horizon 1 s, window 3.
func TestPredictiveLeastConn(t *testing.T) {
	tests := []struct {
		name    string
		periods [][]int64 // in flight by endpoint, one entry per period
		hosts   []int     // nil: every endpoint
		want    []int     // the hosts the last pick may go to
	}{
		{"no trend yet: least in flight", [][]int64{{3, 1, 2}}, nil, []int{1}},
		{"flat trend: least in flight", [][]int64{{3, 1, 2}, {3, 1, 2}, {3, 1, 2}, {3, 1, 2}}, nil, []int{1}},
		// Endpoint 0 rises by 10/s: 2 + 10 = 12 ahead of endpoint 1's 3.
		{"rising host avoided while it is the least loaded", [][]int64{{0, 3}, {1, 3}, {2, 3}}, nil, []int{1}},
		// Endpoint 0 falls by 25/s: forecast 0, below endpoint 1's 2.
		{"falling host preferred while it is the busiest", [][]int64{{8, 2}, {5, 2}, {3, 2}}, nil, []int{0}},
		{"falling hosts tie at zero", [][]int64{{8, 8, 2}, {5, 5, 2}, {3, 3, 2}}, nil, []int{0, 1}},
		{"ties in the middle", [][]int64{{4, 1, 1, 4}, {4, 1, 1, 4}}, nil, []int{1, 2}},
		{"the window forgets an old trend", [][]int64{{0, 3}, {1, 3}, {2, 3}, {2, 3}, {2, 3}, {2, 3}}, nil, []int{0}},
		{"subset without the least forecast", [][]int64{{9, 5, 1}, {5, 5, 1}, {1, 5, 1}}, []int{1, 2}, []int{2}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		n := len(tt.periods[0])
		if hosts == nil {
			hosts = seq(n)
		}
		for order, hosts := range hostOrders(hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				clock := newFakeClock()
				inflight := make([]int64, n)
				env := &buildEnv{n: n, clock: clock, rand: newRand(7), inflight: inflight}
				p := newPredictiveLeastConn(env, time.Second, 100*time.Millisecond, 3)
				p.Pick(Request{}, hosts) // starts the first period
				var last int
				for _, counts := range tt.periods {
					copy(inflight, counts)
					clock.Advance(100 * time.Millisecond)
					last, _ = p.Pick(Request{}, hosts)
				}
				if !slices.Contains(tt.want, last) {
					t.Fatalf("picked %d, want one of %v (slopes %v)", last, tt.want, p.slope)
				}
				// The same state, picked again and again, spreads over the ties.
				picks := 10_000 * len(tt.want)
				counts := make([]int, len(tt.want))
				for range picks {
					ep, done := p.Pick(Request{}, hosts)
					done(Outcome{Status: 200})
					i := slices.Index(tt.want, ep)
					if i < 0 {
						t.Fatalf("picked %d, want one of %v", ep, tt.want)
					}
					counts[i]++
				}
				if df := len(tt.want) - 1; df > 0 {
					if x := chiSquare(counts, picks); x > chiCritical[df] {
						t.Errorf("ties %v picked %v times: chi-square %.1f > %.2f", tt.want, counts, x, chiCritical[df])
					}
				}
			})
		}
	}
}

// TestPredictiveLeastConnSlope checks the least-squares fit against a
// hand computation, on periods of unequal length (an idle gap).
func TestPredictiveLeastConnSlope(t *testing.T) {
	clock := newFakeClock()
	inflight := make([]int64, 1)
	p := newPredictiveLeastConn(&buildEnv{n: 1, clock: clock, rand: newRand(1), inflight: inflight}, time.Second, 100*time.Millisecond, 4)
	p.Pick(Request{}, []int{0})
	// Periods [0, 0.1) mean 2, [0.1, 0.5) mean 4 (an idle gap), [0.5, 0.6)
	// mean 6: mid-times 0.05, 0.3, 0.55; the fit's slope is
	// Σ(t−t̄)(y−ȳ) / Σ(t−t̄)² with t̄ = 0.3, ȳ = 4: (0.25·2 + 0.25·2) / (2·0.0625) = 8.
	for _, step := range []struct {
		count int64
		d     time.Duration
	}{{2, 100 * time.Millisecond}, {4, 400 * time.Millisecond}, {6, 100 * time.Millisecond}} {
		inflight[0] = step.count
		clock.Advance(step.d)
		p.Pick(Request{}, []int{0})
	}
	if got := p.slope[0]; got < 8-1e-9 || got > 8+1e-9 {
		t.Errorf("slope %v, want 8", got)
	}
	// Within a period the count is weighted by how long it was seen.
	inflight[0] = 10
	clock.Advance(25 * time.Millisecond)
	p.Pick(Request{}, []int{0})
	inflight[0] = 2
	clock.Advance(75 * time.Millisecond)
	p.Pick(Request{}, []int{0})
	if got := p.samples[0][3]; got != 4 { // (10·25 + 2·75) / 100
		t.Errorf("period mean %v, want 4", got)
	}
}

// TestPredictiveLeastConnScripted runs a Balancer against scripted
// backends on a fake clock: a request arrives every millisecond; endpoint
// 1 answers in 10 ms, endpoint 0 too but for 1 s to 2 s, when it takes
// 80 ms. Sampled every 500 ms, the forecast 5 s ahead sees endpoint 0's
// count rising and sends it less than least-inflight does during the
// slowdown; once it recovers, its count and then its trend fall, its
// forecast drops to 0, and it gets nearly everything (the overshoot),
// until its own trend rises and the traffic swings back.
func TestPredictiveLeastConnScripted(t *testing.T) {
	// run returns how many requests endpoint 0 got in each 500 ms.
	run := func(spec string) []int {
		clock := newFakeClock()
		b := newChecked(t, spec, Env{N: 2, Rand: newRand(3), Clock: clock}, "")
		type pending struct {
			at   time.Duration
			done func(Outcome)
		}
		var open []pending
		to0 := make([]int, 8)
		for now := time.Duration(0); now < 4*time.Second; now += time.Millisecond {
			kept := open[:0]
			for _, o := range open {
				if o.at <= now {
					o.done(Outcome{Status: 200, Latency: 10 * time.Millisecond})
				} else {
					kept = append(kept, o)
				}
			}
			open = kept
			ep, done := b.Pick(Request{})
			service := 10 * time.Millisecond
			if ep == 0 && now >= time.Second && now < 2*time.Second {
				service = 80 * time.Millisecond
			}
			open = append(open, pending{now + service, done})
			if ep == 0 {
				to0[now/(500*time.Millisecond)]++
			}
			clock.Advance(time.Millisecond)
		}
		for _, o := range open {
			o.done(Outcome{Status: 200})
		}
		if got := b.InFlight(); !slices.Equal(got, []int64{0, 0}) {
			t.Errorf("%s: in flight %v after every done, want [0 0]", spec, got)
		}
		return to0
	}
	li, pr := run("least-inflight"), run("predictive-least-conn(horizon=5s,interval=500ms)")
	t.Logf("requests to endpoint 0 per 500 ms: least-inflight %v, predictive %v", li, pr)
	if slow, liSlow := pr[2]+pr[3], li[2]+li[3]; slow >= liSlow {
		t.Errorf("during the slowdown endpoint 0 got %d requests, %d from least-inflight: want fewer", slow, liSlow)
	}
	if pr[4] < 450 || li[4] > 300 {
		t.Errorf("in the 500 ms after the slowdown endpoint 0 got %d of 500 (least-inflight %d): want nearly all (the overshoot)", pr[4], li[4])
	}
	if pr[5] > 100 {
		t.Errorf("in the next 500 ms endpoint 0 got %d of 500: want the traffic swung back", pr[5])
	}
	for i := range 2 {
		if pr[i] != li[i] || pr[i] < 200 || pr[i] > 300 {
			t.Errorf("before the slowdown, 500 ms %d: endpoint 0 got %d (least-inflight %d), want both about 250", i, pr[i], li[i])
		}
	}
}

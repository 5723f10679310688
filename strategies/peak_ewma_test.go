package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPeakEWMAParams(t *testing.T) {
	tests := []struct {
		spec                     string
		tau, defaultRTT, penalty time.Duration
		wantErr                  string // "" for none
	}{
		{spec: "peak-ewma", tau: 10 * time.Second},
		{spec: "peak-ewma(decay=5s,default_rtt=10ms,failure_penalty=1s)", tau: 5 * time.Second, defaultRTT: 10 * time.Millisecond, penalty: time.Second},
		{spec: "peak-ewma(default_rtt=0,failure_penalty=0s)", tau: 10 * time.Second},
		{spec: "peak-ewma(decay=0)", wantErr: `peak-ewma: decay: want a duration > 0, got "0"`},
		{spec: "peak-ewma(decay=10)", wantErr: `peak-ewma: decay: want a duration like "5s", got "10"`},
		{spec: "peak-ewma(default_rtt=-1ms)", wantErr: `peak-ewma: default_rtt: want a duration >= 0 like "10ms" (0 turns it off), got "-1ms"`},
		{spec: "peak-ewma(failure_penalty=slow)", wantErr: `peak-ewma: failure_penalty: want a duration >= 0 like "10ms" (0 turns it off), got "slow"`},
		{spec: "peak-ewma(tau=1s)", wantErr: `peak-ewma: unknown parameter "tau" (allowed: decay, default_rtt, failure_penalty)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b := newChecked(t, tt.spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}, tt.wantErr)
			if b == nil {
				return
			}
			p := b.picker.(*peakEWMA)
			if p.tau != float64(tt.tau) || p.penalty != float64(tt.penalty) {
				t.Errorf("tau %v, failure penalty %v; want %v, %v", time.Duration(p.tau), time.Duration(p.penalty), tt.tau, tt.penalty)
			}
			for ep, h := range p.hosts {
				if h.cost != float64(tt.defaultRTT) {
					t.Errorf("endpoint %d starts at cost %v, want %v", ep, time.Duration(h.cost), tt.defaultRTT)
				}
			}
		})
	}
}

// TestPeakEWMAScripted drives one endpoint's cost through a script of clock
// moves, outcomes and load reads, checking its exact cost and load after
// each step.
func TestPeakEWMAScripted(t *testing.T) {
	const tau = 10 * time.Second
	ms := func(f float64) float64 { return f * 1e6 }
	e1, e2 := math.Exp(-1), math.Exp(-2)
	type step struct {
		advance  time.Duration
		outcome  *Outcome // nil: read the load
		pending  int64    // requests in flight while the step runs
		wantCost float64  // nanoseconds
		wantLoad float64  // checked when the step reads the load
	}
	ok := func(d time.Duration) *Outcome { return &Outcome{Status: 200, Latency: d} }
	failed := func(d time.Duration) *Outcome { return &Outcome{Status: 503, Latency: d} }
	tests := []struct {
		name           string
		defaultRTT     time.Duration
		failurePenalty time.Duration
		steps          []step
	}{
		{name: "a spike sets the cost to the peak, which then decays", steps: []step{
			{outcome: ok(10 * time.Millisecond), wantCost: ms(10)},
			{advance: time.Second, outcome: ok(10 * time.Millisecond), wantCost: ms(10)},
			{advance: time.Second, outcome: ok(100 * time.Millisecond), wantCost: ms(100)},
			{advance: tau, wantCost: ms(100) * e1, wantLoad: ms(100) * e1},
			{advance: tau / 2, pending: 2, wantCost: ms(100) * math.Exp(-1.5), wantLoad: 3 * ms(100) * math.Exp(-1.5)},
			{advance: tau / 2, wantCost: ms(100) * e2, wantLoad: ms(100) * e2},
		}},
		{name: "after a peak the cost decays towards the new rtt", steps: []step{
			{outcome: ok(100 * time.Millisecond), wantCost: ms(100)},
			{advance: tau, outcome: ok(10 * time.Millisecond), wantCost: ms(100)*e1 + ms(10)*(1-e1)},
			{advance: tau, outcome: ok(10 * time.Millisecond), wantCost: (ms(100)*e1+ms(10)*(1-e1))*e1 + ms(10)*(1-e1)},
		}},
		{name: "a lower rtt at the same instant leaves the cost", steps: []step{
			{outcome: ok(50 * time.Millisecond), wantCost: ms(50)},
			{outcome: ok(time.Millisecond), wantCost: ms(50)},
			{pending: 1, wantCost: ms(50), wantLoad: ms(100)},
		}},
		{name: "a peak above the decayed cost jumps", steps: []step{
			{outcome: ok(100 * time.Millisecond), wantCost: ms(100)},
			{advance: tau, wantCost: ms(100) * e1, wantLoad: ms(100) * e1},
			{advance: 0, outcome: ok(40 * time.Millisecond), wantCost: ms(40)},
		}},
		{name: "unmeasured host with pending requests gets the penalty", steps: []step{
			{wantCost: 0, wantLoad: 0},
			{pending: 1, wantCost: 0, wantLoad: peakEWMAPenalty + 1},
			{advance: time.Second, pending: 3, wantCost: 0, wantLoad: peakEWMAPenalty + 3},
			{outcome: ok(5 * time.Millisecond), wantCost: ms(5)},
			{pending: 3, wantCost: ms(5), wantLoad: ms(20)},
		}},
		{name: "default rtt replaces the penalty and decays like a cost", defaultRTT: 10 * time.Millisecond, steps: []step{
			{pending: 2, wantCost: ms(10), wantLoad: ms(30)},
			{advance: tau, pending: 2, wantCost: ms(10) * e1, wantLoad: 3 * ms(10) * e1},
			{outcome: ok(2 * time.Millisecond), wantCost: ms(10) * e1}, // same instant: w = 1
			{advance: tau, outcome: ok(2 * time.Millisecond), wantCost: ms(10)*e2 + ms(2)*(1-e1)},
			{outcome: ok(5 * time.Millisecond), wantCost: ms(5)},
		}},
		{name: "fast failures look fast without a failure penalty", steps: []step{
			{outcome: ok(50 * time.Millisecond), wantCost: ms(50)},
			{advance: tau, outcome: failed(time.Millisecond), wantCost: ms(50)*e1 + ms(1)*(1-e1)},
			{advance: tau, outcome: &Outcome{Timeout: true, Latency: time.Millisecond}, wantCost: (ms(50)*e1+ms(1)*(1-e1))*e1 + ms(1)*(1-e1)},
		}},
		{name: "failure penalty keeps a 1ms failing host at the penalty", failurePenalty: 100 * time.Millisecond, steps: []step{
			{outcome: ok(time.Millisecond), wantCost: ms(1)},
			{advance: time.Millisecond, outcome: failed(time.Millisecond), wantCost: ms(100)},
			{advance: time.Second, outcome: failed(time.Millisecond), wantCost: ms(100)},
			{advance: tau, outcome: &Outcome{Err: refused.Err, Latency: 0}, wantCost: ms(100)},
			{advance: tau, outcome: &Outcome{Timeout: true, Latency: 2 * time.Second}, wantCost: ms(2000)},
			{advance: tau, outcome: ok(time.Millisecond), wantCost: ms(2000)*e1 + ms(1)*(1-e1)},
		}},
		{name: "a negative latency counts as 0", steps: []step{
			{outcome: ok(20 * time.Millisecond), wantCost: ms(20)},
			{advance: tau, outcome: ok(-time.Second), wantCost: ms(20) * e1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			inflight := make([]int64, 2)
			p := newPeakEWMA(2, tau, tt.defaultRTT, tt.failurePenalty, clock, newRand(1), inflight)
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				inflight[1] = s.pending
				if s.outcome != nil {
					p.dones[1](*s.outcome)
				} else if got := p.load(1, p.now()); !sampledClose(got, s.wantLoad) {
					t.Fatalf("step %d: load %g, want %g", i, got, s.wantLoad)
				}
				if got := p.hosts[1].cost; !sampledClose(got, s.wantCost) {
					t.Fatalf("step %d: cost %v, want %v", i, time.Duration(got), time.Duration(s.wantCost))
				}
				if got, want := p.hosts[1].stamp, clock.Now().UnixNano(); got != want {
					t.Fatalf("step %d: stamp %d, want %d (now)", i, got, want)
				}
			}
			if h := p.hosts[0]; h.cost != float64(tt.defaultRTT) || h.stamp != epoch0.UnixNano() {
				t.Errorf("endpoint 0 changed: %+v", h)
			}
		})
	}
}

// sampledClose reports whether a and b agree to a relative 1e-9.
func sampledClose(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b))
}

func TestPeakEWMADecayComposes(t *testing.T) {
	// Reading the load decays the stored cost; reading it often or once
	// gives the same cost, since observing 0 never takes the peak branch.
	const tau = 10 * time.Second
	for _, reads := range []int{1, 2, 7, 100} {
		t.Run(fmt.Sprintf("%d reads", reads), func(t *testing.T) {
			clock := newFakeClock()
			p := newPeakEWMA(1, tau, 0, 0, clock, newRand(1), make([]int64, 1))
			p.dones[0](Outcome{Status: 200, Latency: 80 * time.Millisecond})
			for range reads {
				clock.Advance(3 * tau / time.Duration(reads))
				p.load(0, p.now())
			}
			if want := 80e6 * math.Exp(-3); !sampledClose(p.hosts[0].cost, want) {
				t.Errorf("cost %g after %d reads over 3τ, want %g", p.hosts[0].cost, reads, want)
			}
		})
	}
}

func TestPeakEWMAClockBackwards(t *testing.T) {
	// A time before the last update counts as Δt = 0 and becomes the
	// stamp, as in Finagle; the next update decays from there.
	clock := newFakeClock()
	p := newPeakEWMA(1, 10*time.Second, 0, 0, clock, newRand(1), make([]int64, 1))
	p.dones[0](Outcome{Status: 200, Latency: 50 * time.Millisecond})
	earlier := p.now() - int64(time.Second)
	p.update(0, 0, earlier)
	if h := p.hosts[0]; h.cost != 50e6 || h.stamp != earlier {
		t.Fatalf("after an earlier time: %+v, want cost 50ms and stamp %d", h, earlier)
	}
	p.load(0, p.now())
	if want := 50e6 * math.Exp(-0.1); !sampledClose(p.hosts[0].cost, want) {
		t.Errorf("cost %g after decaying 1s, want %g", p.hosts[0].cost, want)
	}
}

func TestPeakEWMASelection(t *testing.T) {
	type state struct {
		cost    float64 // ms
		pending int64
	}
	load := func(s state) float64 {
		if s.cost == 0 && s.pending > 0 {
			return peakEWMAPenalty + float64(s.pending)
		}
		return s.cost * 1e6 * float64(s.pending+1)
	}
	tests := []struct {
		name   string
		n      int
		hosts  []int // nil: all
		states []state
	}{
		{"distinct costs", 4, nil, []state{{10, 0}, {20, 0}, {30, 0}, {40, 0}}},
		{"pending multiplies the cost", 4, nil, []state{{10, 4}, {20, 0}, {15, 1}, {25, 0}}},
		{"penalty for unmeasured pending", 4, nil, []state{{0, 1}, {0, 2}, {500, 3}, {0, 0}}},
		{"ties", 4, nil, []state{{10, 1}, {20, 0}, {5, 3}, {40, 0}}},
		{"all equal", 5, nil, []state{{3, 0}, {3, 0}, {3, 0}, {3, 0}, {3, 0}}},
		{"subset of endpoints", 6, []int{0, 2, 5}, []state{{10, 0}, {7, 0}, {30, 0}}},
		{"two hosts", 2, nil, []state{{10, 0}, {9, 0}}},
		{"two hosts tied", 2, nil, []state{{10, 1}, {20, 0}}},
		{"one host", 3, []int{1}, []state{{0, 9}}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(tt.n)
		}
		loads := make([]float64, len(tt.states))
		for i, s := range tt.states {
			loads[i] = load(s)
		}
		t.Run(tt.name, func(t *testing.T) {
			sampledSelection(t, tt.n, hosts, loads, 2, 4000, func(stateOf []int, r *rand.Rand) Picker {
				inflight := make([]int64, tt.n)
				p := newPeakEWMA(tt.n, 10*time.Second, 0, 0, newFakeClock(), r, inflight)
				for ep, s := range stateOf {
					if s < 0 {
						continue // outside hosts: cost 0, nothing pending, the best
					}
					p.hosts[ep].cost, inflight[ep] = tt.states[s].cost*1e6, tt.states[s].pending
				}
				return p
			})
		})
	}
}

// TestPeakEWMAPenaltyThroughBalancer holds requests open on unmeasured
// endpoints: one with a request pending is penalised, so the next pick
// goes to the idle one, and the first answer makes its endpoint cheap.
func TestPeakEWMAPenaltyThroughBalancer(t *testing.T) {
	clock := newFakeClock()
	b, err := New("peak-ewma", Env{N: 2, Rand: newRand(2), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	first, doneFirst := b.Pick(Request{})
	second, doneSecond := b.Pick(Request{})
	if first == second {
		t.Fatalf("both picks went to %d; the one with a request pending and no measurement must be penalised", first)
	}
	clock.Advance(30 * time.Millisecond)
	doneSecond(Outcome{Status: 200, Latency: 30 * time.Millisecond})
	// second: cost 30ms, nothing pending; first: penalised.
	for i := range 5 {
		ep, done := b.Pick(Request{})
		if ep != second {
			t.Fatalf("pick %d went to %d, want %d (measured) over %d (penalised)", i, ep, second, first)
		}
		defer done(ok200)
	}
	doneFirst(Outcome{Status: 200, Latency: 30 * time.Millisecond})
}

// TestPeakEWMAFailurePenaltyThroughBalancer runs a Balancer against one
// endpoint that fails in 1ms and four that answer in 20ms: without a
// failure penalty the failing one wins every pair it is drawn in, 2/5 of
// the picks; with one it wins almost none, only when its penalised cost
// has decayed below 20ms (after τ·ln 10 without a pick).
func TestPeakEWMAFailurePenaltyThroughBalancer(t *testing.T) {
	tests := []struct {
		spec     string
		min, max float64 // bounds of endpoint 0's share
	}{
		{"peak-ewma", 0.35, 0.45},
		{"peak-ewma(failure_penalty=200ms)", 0, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			clock := newFakeClock()
			b, err := New(tt.spec, Env{N: 5, Rand: newRand(8), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			const picks = 10_000
			counts := pickFastFailing(b, clock, 5, picks, 20*time.Millisecond)
			if share := float64(counts[0]) / picks; share < tt.min || share > tt.max {
				t.Errorf("counts %v: endpoint 0 took %.3f of picks, want [%g, %g]", counts, share, tt.min, tt.max)
			}
		})
	}
}

func TestPeakEWMASetHostsKeepsCosts(t *testing.T) {
	clock := newFakeClock()
	b, err := New("peak-ewma", Env{N: 4, Rand: newRand(5), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	p := b.picker.(*peakEWMA)
	for ep := range 4 {
		p.dones[ep](Outcome{Status: 200, Latency: time.Duration(ep+1) * 10 * time.Millisecond})
	}
	if err := b.SetHosts([]int{3, 1}); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		ep, done := b.Pick(Request{})
		if ep != 1 {
			t.Fatalf("picked %d from {1: 20ms, 3: 40ms}, want 1", ep)
		}
		done(Outcome{Status: 200, Latency: 20 * time.Millisecond})
	}
	clock.Advance(10 * time.Second)
	if err := b.SetHosts([]int{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	// Endpoint 0 kept its 10ms, decayed over its absence, and wins every
	// pair it is in; endpoint 3 (40ms decayed) loses every pair.
	counts := make([]int, 4)
	for range 600 {
		ep, done := b.Pick(Request{})
		counts[ep]++
		done(Outcome{Status: 200, Latency: 0})
	}
	if counts[3] != 0 || counts[0] < counts[1] {
		t.Errorf("counts %v: want endpoint 0 most, 3 never", counts)
	}
	if got := b.InFlight(); !slices.Equal(got, make([]int64, 4)) {
		t.Errorf("InFlight() = %v", got)
	}
}

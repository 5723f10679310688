package strategies

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	healthOK  = Outcome{Status: 200, Latency: 10 * time.Millisecond}
	healthBad = Outcome{Status: 503, Latency: 10 * time.Millisecond}
)

// healthRig drives a health wrapper over n endpoints with a fake clock.
type healthRig struct {
	t      *testing.T
	clock  *fakeClock
	h      *health
	one    [][]int // one[ep] = []int{ep}: a pick from it always yields ep
	all    []int
	events []Event
	held   []func(Outcome)
}

func newHealthRig(t *testing.T, n int, params map[string]string) *healthRig {
	t.Helper()
	cfg, err := parseHealthConfig(params)
	if err != nil {
		t.Fatal(err)
	}
	r := &healthRig{t: t, clock: newFakeClock(), all: seq(n)}
	for ep := range n {
		r.one = append(r.one, []int{ep})
	}
	env := &buildEnv{n: n, clock: r.clock, rand: newRand(1), events: func(e Event) { r.events = append(r.events, e) }}
	r.h = newHealth(&steer{t: t, target: -1}, env, cfg)
	return r
}

// to moves the clock to d after the start.
func (r *healthRig) to(d time.Duration) {
	r.t.Helper()
	if now := r.clock.Now(); at(d).Before(now) {
		r.t.Fatalf("clock at %v, cannot go back to %v", now.Sub(epoch0), d)
	}
	r.clock.Advance(at(d).Sub(r.clock.Now()))
}

// send picks ep times times at the current time and reports o for each.
func (r *healthRig) send(ep int, o Outcome, times int) {
	r.t.Helper()
	for range times {
		got, done := feedPick(r.h, Request{}, r.one[ep])
		if got != ep {
			r.t.Fatalf("picked %d from [%d]", got, ep)
		}
		done(o)
	}
}

// steady sends perSecond outcomes o to ep at every whole second from..to.
func (r *healthRig) steady(ep int, o Outcome, perSecond int, from, to int) {
	r.t.Helper()
	for s := from; s <= to; s++ {
		r.to(time.Duration(s) * time.Second)
		r.send(ep, o, perSecond)
	}
}

// hold picks ep and keeps the request open.
func (r *healthRig) hold(ep int) {
	_, done := feedPick(r.h, Request{}, r.one[ep])
	r.held = append(r.held, done)
}

func (r *healthRig) release(o Outcome) {
	for _, done := range r.held {
		done(o)
	}
	r.held = nil
}

// tick picks among every endpoint at the current time without reporting,
// which applies the time-based changes lazily.
func (r *healthRig) tick() { feedPick(r.h, Request{}, r.all) }

// want checks ep's level and factor.
func (r *healthRig) want(ep int, level healthLevel, factor float64) {
	r.t.Helper()
	now := r.clock.Now().Sub(epoch0)
	if got := r.h.hosts[ep].level; got != level {
		r.t.Fatalf("at %v: endpoint %d is %v, want %v", now, ep, got, level)
	}
	if got := r.h.w.get(ep); math.Abs(got-factor) > 1e-9 {
		r.t.Fatalf("at %v: endpoint %d has factor %v, want %v", now, ep, got, factor)
	}
}

// windowReqs returns the requests in ep's window now.
func (r *healthRig) windowReqs(ep int) int64 {
	reqs, _, _ := r.h.window(ep, r.h.bucketIdx(r.clock.Now()))
	return reqs
}

func healthEvent(d time.Duration, ep int, level string) Event {
	return Event{Time: at(d), Endpoint: ep, Kind: EventHealth, Detail: level}
}

// ladder drives endpoint 1 to critical at 0s and back to healthy at 21s
// with steady good traffic.
func ladder(r *healthRig) {
	r.send(1, healthOK, 15)
	r.send(1, healthBad, 4)
	r.want(1, levelHealthy, 1) // 19 requests: not judged yet
	r.send(1, healthBad, 1)
	r.want(1, levelCritical, 0.1)    // 5 of 20 failed: two levels at once
	r.steady(1, healthOK, 25, 1, 10) // judged better from 1s on
	r.want(1, levelCritical, 0.1)
	if got := r.h.hosts[1].streak; !got.Equal(at(time.Second)) {
		r.t.Fatalf("run of better judgements started at %v, want 1s", got.Sub(epoch0))
	}
	r.steady(1, healthOK, 25, 11, 11)
	r.want(1, levelDegraded, 0.5)
	r.steady(1, healthOK, 25, 12, 20)
	r.want(1, levelDegraded, 0.5)
	r.steady(1, healthOK, 25, 21, 21)
	r.want(1, levelHealthy, 0.5) // the ramp starts at the degraded weight
}

func TestHealthScripted(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		params    map[string]string
		script    func(r *healthRig)
		events    []Event
		ejected   []int
		ejections int
	}{
		{
			name: "19 failures are not judged", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthBad, 19)
				r.want(1, levelHealthy, 1)
			},
		},
		{
			name: "one failure in twenty is degraded", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthOK, 19)
				r.send(1, healthBad, 1)
				r.want(1, levelDegraded, 0.5)
			},
			events: []Event{healthEvent(0, 1, "degraded")},
		},
		{
			name: "all failures: healthy to unhealthy at once", n: 10,
			script: func(r *healthRig) {
				r.send(2, healthBad, 20)
				r.want(2, levelUnhealthy, 0)
			},
			events:    []Event{healthEvent(0, 2, "unhealthy")},
			ejected:   []int{2},
			ejections: 1,
		},
		{
			name: "recover one level per recover, then ramp", n: 10,
			script: func(r *healthRig) {
				ladder(r)
				r.to(26 * time.Second)
				r.tick()
				r.want(1, levelHealthy, 0.75) // half of the ramp
				r.to(28500 * time.Millisecond)
				r.h.Sweep(r.clock.Now())
				r.want(1, levelHealthy, 0.875)
				r.to(31 * time.Second)
				r.tick()
				r.want(1, levelHealthy, 1)
				if len(r.h.watched) != 0 || r.h.nRamping != 0 {
					r.t.Errorf("after the ramp: watched %v, %d ramping", r.h.watched, r.h.nRamping)
				}
			},
			events: []Event{
				healthEvent(0, 1, "critical"),
				healthEvent(11*time.Second, 1, "degraded"),
				healthEvent(21*time.Second, 1, "healthy"),
			},
		},
		{
			name: "worsening during the ramp ends it", n: 10,
			script: func(r *healthRig) {
				ladder(r)
				r.to(26 * time.Second)
				r.send(1, healthBad, 6) // 6 of 131 failed
				r.want(1, levelHealthy, 0.75)
				r.send(1, healthBad, 1) // 7 of 132
				r.want(1, levelDegraded, 0.5)
				if r.h.nRamping != 0 || r.h.hosts[1].ramping {
					r.t.Errorf("still ramping after worsening")
				}
			},
			events: []Event{
				healthEvent(0, 1, "critical"),
				healthEvent(11*time.Second, 1, "degraded"),
				healthEvent(21*time.Second, 1, "healthy"),
				healthEvent(26*time.Second, 1, "degraded"),
			},
		},
		{
			name: "a judgement not better breaks the run", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthOK, 15)
				r.send(1, healthBad, 5)
				r.steady(1, healthOK, 25, 1, 4) // run from 1s
				r.to(5 * time.Second)
				r.send(1, healthBad, 30) // critical again: the run ends
				r.want(1, levelCritical, 0.1)
				if !r.h.hosts[1].streak.IsZero() {
					r.t.Fatalf("run not broken")
				}
				r.steady(1, healthOK, 25, 6, 16) // better from 7s on
				r.want(1, levelCritical, 0.1)
				r.steady(1, healthOK, 25, 17, 17)
				r.want(1, levelDegraded, 0.5)
			},
			events: []Event{healthEvent(0, 1, "critical"), healthEvent(17*time.Second, 1, "degraded")},
		},
		{
			name: "the run completes on Pick without traffic", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthOK, 15)
				r.send(1, healthBad, 5)
				r.steady(1, healthOK, 25, 1, 1) // run from 1s; no more traffic
				r.to(11*time.Second - 1)
				r.tick()
				r.want(1, levelCritical, 0.1)
				r.to(11 * time.Second)
				r.tick()
				r.want(1, levelDegraded, 0.5)
				// Not judged since: the next level needs a new run.
				r.to(40 * time.Second)
				r.tick()
				r.want(1, levelDegraded, 0.5)
			},
			events: []Event{healthEvent(0, 1, "critical"), healthEvent(11*time.Second, 1, "degraded")},
		},
		{
			name: "max_middle: degraded then critical for 60s is unhealthy", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthOK, 19)
				r.send(1, healthBad, 1)
				r.to(30 * time.Second)
				r.send(1, healthOK, 15)
				r.send(1, healthBad, 5)
				r.want(1, levelCritical, 0.1)
				r.to(60*time.Second - 1)
				r.h.Sweep(r.clock.Now())
				r.want(1, levelCritical, 0.1)
				r.to(60 * time.Second)
				r.tick()
				r.want(1, levelUnhealthy, 0)
			},
			events: []Event{
				healthEvent(0, 1, "degraded"),
				healthEvent(30*time.Second, 1, "critical"),
				healthEvent(60*time.Second, 1, "unhealthy"),
			},
			ejected:   []int{1},
			ejections: 1,
		},
		{
			name: "max_middle waits for a recovery run", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthOK, 19)
				r.send(1, healthBad, 1)
				r.steady(1, healthOK, 25, 52, 61) // judged healthy from 52s on
				r.to(61500 * time.Millisecond)
				r.tick()
				r.want(1, levelDegraded, 0.5)
				r.steady(1, healthOK, 25, 62, 62)
				r.want(1, levelHealthy, 0.5)
			},
			events: []Event{healthEvent(0, 1, "degraded"), healthEvent(62*time.Second, 1, "healthy")},
		},
		{
			name: "max_middle applies once the run breaks", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthOK, 19)
				r.send(1, healthBad, 1)
				r.steady(1, healthOK, 25, 52, 61)
				r.send(1, healthBad, 13) // 13 of 263 failed: still better
				r.want(1, levelDegraded, 0.5)
				if r.h.hosts[1].streak.IsZero() {
					r.t.Fatal("run broken too early")
				}
				r.send(1, healthBad, 1) // 14 of 264: degraded, the run breaks
				r.want(1, levelDegraded, 0.5)
				r.tick()
				r.want(1, levelUnhealthy, 0)
			},
			events:    []Event{healthEvent(0, 1, "degraded"), healthEvent(61*time.Second, 1, "unhealthy")},
			ejected:   []int{1},
			ejections: 1,
		},
		{
			name: "probation after recover, judged afresh", n: 10,
			script: func(r *healthRig) {
				r.send(1, healthBad, 20)
				r.to(10*time.Second - 1)
				r.h.Sweep(r.clock.Now())
				r.want(1, levelUnhealthy, 0)
				r.to(10 * time.Second)
				r.h.Sweep(r.clock.Now())
				r.want(1, levelCritical, 0.1)
				if got := r.windowReqs(1); got != 0 {
					r.t.Fatalf("window holds %d requests after probation, want 0", got)
				}
				r.send(1, healthBad, 20) // still failing: out again
				r.want(1, levelUnhealthy, 0)
				r.to(20 * time.Second)
				r.tick()
				r.want(1, levelCritical, 0.1)
				r.send(1, healthOK, 20) // fine now: a run starts
				r.want(1, levelCritical, 0.1)
				r.steady(1, healthOK, 25, 21, 30)
				r.want(1, levelDegraded, 0.5)
			},
			events: []Event{
				healthEvent(0, 1, "unhealthy"),
				healthEvent(10*time.Second, 1, "critical"),
				healthEvent(10*time.Second, 1, "unhealthy"),
				healthEvent(20*time.Second, 1, "critical"),
				healthEvent(30*time.Second, 1, "degraded"),
			},
			ejections: 2,
		},
		{
			name: "outcomes from before ejection or probation are ignored", n: 10,
			script: func(r *healthRig) {
				r.hold(1)
				r.hold(1)
				r.send(1, healthBad, 20)
				r.want(1, levelUnhealthy, 0)
				r.release(healthBad) // done while unhealthy
				r.hold(1)            // picked while unhealthy (only host given)
				r.to(10 * time.Second)
				r.tick()
				r.want(1, levelCritical, 0.1)
				r.release(healthBad) // picked before probation
				if got := r.windowReqs(1); got != 0 {
					r.t.Fatalf("window holds %d requests, want 0", got)
				}
				r.hold(1)
				r.release(healthOK)
				if got := r.windowReqs(1); got != 1 {
					r.t.Fatalf("window holds %d requests, want 1", got)
				}
			},
			events: []Event{
				healthEvent(0, 1, "unhealthy"),
				healthEvent(10*time.Second, 1, "critical"),
			},
			ejections: 1,
		},
		{
			name: "max_ejected caps unhealthy hosts; the rest stay critical", n: 10,
			script: func(r *healthRig) {
				for ep := range 5 {
					r.send(ep, healthBad, 20)
				}
				for ep, l := range []healthLevel{levelUnhealthy, levelUnhealthy, levelUnhealthy, levelCritical, levelCritical} {
					r.want(ep, l, r.h.cfg.weights[l])
				}
				r.to(10 * time.Second)
				r.h.Sweep(r.clock.Now()) // 0, 1 and 2 on probation
				for _, ep := range []int{3, 4, 0, 1} {
					r.send(ep, healthBad, 20)
				}
				for ep, l := range []healthLevel{levelUnhealthy, levelCritical, levelCritical, levelUnhealthy, levelUnhealthy} {
					r.want(ep, l, r.h.cfg.weights[l])
				}
			},
			events: []Event{
				healthEvent(0, 0, "unhealthy"),
				healthEvent(0, 1, "unhealthy"),
				healthEvent(0, 2, "unhealthy"),
				healthEvent(0, 3, "critical"),
				healthEvent(0, 4, "critical"),
				healthEvent(10*time.Second, 0, "critical"),
				healthEvent(10*time.Second, 1, "critical"),
				healthEvent(10*time.Second, 2, "critical"),
				healthEvent(10*time.Second, 3, "unhealthy"),
				healthEvent(10*time.Second, 4, "unhealthy"),
				healthEvent(10*time.Second, 0, "unhealthy"),
			},
			ejected:   []int{0, 3, 4},
			ejections: 6,
		},
		{
			name: "max_middle at the cap: critical, unhealthy once room frees", n: 10,
			params: map[string]string{"recover": "100s"},
			script: func(r *healthRig) {
				for ep := range 3 {
					r.send(ep, healthBad, 20)
				}
				r.send(3, healthOK, 19)
				r.send(3, healthBad, 1)
				r.to(60 * time.Second)
				r.tick()
				r.want(3, levelCritical, 0.1)
				r.to(80 * time.Second)
				r.tick()
				r.want(3, levelCritical, 0.1)
				r.to(100 * time.Second)
				r.h.Sweep(r.clock.Now())
				r.want(3, levelUnhealthy, 0)
			},
			events: []Event{
				healthEvent(0, 0, "unhealthy"),
				healthEvent(0, 1, "unhealthy"),
				healthEvent(0, 2, "unhealthy"),
				healthEvent(0, 3, "degraded"),
				healthEvent(60*time.Second, 3, "critical"),
				healthEvent(100*time.Second, 0, "critical"),
				healthEvent(100*time.Second, 1, "critical"),
				healthEvent(100*time.Second, 2, "critical"),
				healthEvent(100*time.Second, 3, "unhealthy"),
			},
			ejected:   []int{3},
			ejections: 4,
		},
		{
			name: "max_ejected 0: never unhealthy", n: 10, params: map[string]string{"max_ejected": "0"},
			script: func(r *healthRig) {
				r.send(1, healthBad, 20)
				r.to(time.Hour)
				r.tick()
				r.want(1, levelCritical, 0.1)
			},
			events: []Event{healthEvent(0, 1, "critical")},
		},
		{
			name: "three hosts at 30%: never unhealthy", n: 3,
			script: func(r *healthRig) {
				r.send(1, healthBad, 20)
				r.want(1, levelCritical, 0.1)
			},
			events: []Event{healthEvent(0, 1, "critical")},
		},
		{
			name: "custom weights and thresholds", n: 10,
			params: map[string]string{"weights": "1:0.8:0.3:0", "degraded_errors": "0.1", "critical_errors": "0.1", "min_requests": "10"},
			script: func(r *healthRig) {
				r.send(1, healthOK, 9)
				r.send(1, healthBad, 1)
				r.want(1, levelCritical, 0.3) // degraded and critical share a threshold
				r.send(2, healthOK, 10)
				r.send(2, healthBad, 1) // 1 of 11
				r.want(2, levelHealthy, 1)
			},
			events: []Event{healthEvent(0, 1, "critical")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newHealthRig(t, tt.n, tt.params)
			tt.script(r)
			if diff := cmp.Diff(tt.events, r.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.ejected, r.h.Ejected(nil)); diff != "" {
				t.Errorf("Ejected (-want +got):\n%s", diff)
			}
			if got := r.h.Ejections(); got != tt.ejections {
				t.Errorf("Ejections() = %d, want %d", got, tt.ejections)
			}
			checkHealthInvariants(t, r.h)
		})
	}
}

// TestHealthLatency judges one or two slow hosts among five against the
// fleet's median latency, with the slow hosts at every position.
func TestHealthLatency(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name      string
		latency   time.Duration // of the slow hosts; the others take 10ms
		failures  int           // of the slow hosts, per 21 requests
		slow      int           // how many slow hosts
		allSlow   bool
		wantLevel []healthLevel // of the slow hosts, as a multiset
	}{
		{"1.5 times the median is healthy", 15 * ms, 0, 1, false, []healthLevel{levelHealthy}},
		{"twice the median is degraded", 20 * ms, 0, 1, false, []healthLevel{levelDegraded}},
		{"just under four times is degraded", 39 * ms, 0, 1, false, []healthLevel{levelDegraded}},
		{"four times is critical", 40 * ms, 0, 1, false, []healthLevel{levelCritical}},
		{"eight times is unhealthy", 80 * ms, 0, 1, false, []healthLevel{levelUnhealthy}},
		{"two slow hosts of five: one ejected, one capped", 80 * ms, 0, 2, false, []healthLevel{levelCritical, levelUnhealthy}},
		{"everyone slow is no one slow", 100 * ms, 0, 5, true, []healthLevel{levelHealthy, levelHealthy, levelHealthy, levelHealthy, levelHealthy}},
		{"errors degraded, latency critical: critical", 40 * ms, 3, 1, false, []healthLevel{levelCritical}},
		{"errors critical, latency degraded: critical", 20 * ms, 5, 1, false, []healthLevel{levelCritical}},
	}
	for _, tt := range tests {
		for _, first := range []int{0, 2, 4} {
			t.Run(fmt.Sprintf("%s/slow from %d", tt.name, first), func(t *testing.T) {
				r := newHealthRig(t, 5, nil)
				slow := map[int]bool{}
				for i := range tt.slow {
					slow[(first+i)%5] = true
				}
				// 20 rounds at 0s, then one at 1s, when the fleet median
				// is refreshed with every host.
				for round := range 21 {
					if round == 20 {
						r.to(time.Second)
					}
					for ep := range 5 {
						o := healthOK
						if slow[ep] {
							o.Latency = tt.latency
							if round < tt.failures {
								o.Status = 503
							}
						}
						r.send(ep, o, 1)
					}
				}
				var got []healthLevel
				for ep := range 5 {
					if slow[ep] {
						got = append(got, r.h.hosts[ep].level)
					} else if l := r.h.hosts[ep].level; l != levelHealthy {
						t.Errorf("fast host %d is %v", ep, l)
					}
				}
				slices.Sort(got)
				if diff := cmp.Diff(tt.wantLevel, got); diff != "" {
					t.Errorf("levels of the slow hosts (-want +got):\n%s", diff)
				}
				if want := 10 * ms; tt.allSlow {
					want = tt.latency
					if r.h.median != float64(want) {
						t.Errorf("fleet median %v, want %v", time.Duration(r.h.median), want)
					}
				} else if r.h.median != float64(want) {
					t.Errorf("fleet median %v, want %v", time.Duration(r.h.median), want)
				}
				checkHealthInvariants(t, r.h)
			})
		}
	}
}

// TestHealthShares measures the picks of a degraded and a critical host
// among six with a uniform inner Picker against the exact shares of the
// weighting, with the hosts in every order.
func TestHealthShares(t *testing.T) {
	for order, hosts := range hostOrders(seq(6)) {
		t.Run(order, func(t *testing.T) {
			r := newHealthRig(t, 6, nil)
			inner := &uniformInner{r: &random{rand: newRand(21)}}
			r.h.inner, r.h.feed = inner, newHostFeed(inner)
			r.send(2, healthOK, 19)
			r.send(2, healthBad, 1)
			r.send(5, healthBad, 5)
			r.send(5, healthOK, 15)
			r.want(2, levelDegraded, 0.5)
			r.want(5, levelCritical, 0.1)
			want := weightedShares(map[int]float64{2: 0.5, 5: 0.1}, hosts)
			const picks = 100_000
			counts := make([]int, 6)
			for range picks {
				ep, _ := feedPick(r.h, Request{}, hosts) // not reported
				counts[ep]++
			}
			var x float64
			for ep, c := range counts {
				exp := want[ep] * picks
				x += (float64(c) - exp) * (float64(c) - exp) / exp
			}
			if x > chiCritical[5] {
				t.Errorf("counts %v, want shares %v: chi-square %.1f > %.2f", counts, want, x, chiCritical[5])
			}
		})
	}
}

func TestHealthThroughBalancer(t *testing.T) {
	clock := newFakeClock()
	var events []Event
	b, err := New("p2c+health", Env{N: 10, Rand: newRand(4), Clock: clock, Events: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	pick := func() int {
		ep, done := b.Pick(Request{})
		if ep == 3 {
			done(Outcome{Status: 500, Latency: time.Millisecond})
		} else {
			done(healthOK)
		}
		return ep
	}
	for range 1000 {
		pick()
	}
	if got := b.Ejected(); !slices.Equal(got, []int{3}) || b.Ejections() != 1 {
		t.Fatalf("Ejected() = %v, Ejections() = %d; want [3], 1", got, b.Ejections())
	}
	for range 5000 {
		if ep := pick(); ep == 3 {
			t.Fatalf("unhealthy endpoint 3 picked")
		}
	}
	want := []Event{{epoch0, 3, EventHealth, "unhealthy"}}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// On probation after 10s it gets a tenth of a share, fails again and
	// is out again.
	clock.Advance(10 * time.Second)
	for range 6000 {
		pick()
	}
	want = append(want, Event{at(10 * time.Second), 3, EventHealth, "critical"}, Event{at(10 * time.Second), 3, EventHealth, "unhealthy"})
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := b.InFlight(); !slices.Equal(got, make([]int64, 10)) {
		t.Errorf("InFlight() = %v, want zeros", got)
	}
}

// TestHealthProperties drives the health wrapper through the Balancer with
// random outcomes, latencies and clock moves, and checks its bookkeeping
// after every step: the counts, the watched list, the factors, the cap, and
// that no unhealthy host is picked.
func TestHealthProperties(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		script := newRand(seed * 7919)
		n := 1 + script.IntN(8)
		clock := newFakeClock()
		var events []Event
		b, err := New("p2c+health(window=2s,recover=1s,ramp=1s,max_middle=3s,min_requests=5,max_ejected=0.5)", Env{
			N: n, Rand: newRand(seed), Clock: clock, Events: func(e Event) { events = append(events, e) },
		})
		if err != nil {
			t.Fatal(err)
		}
		h := b.picker.(*health)
		outcome := func(ep int) Outcome {
			o := Outcome{Status: 200, Latency: time.Duration(5+script.IntN(10)) * time.Millisecond}
			switch {
			case ep == 0 && script.IntN(10) < 8:
				o.Status = 503
			case ep == 1:
				o.Latency *= 10
			case script.IntN(20) == 0:
				o.Timeout = true
			}
			return o
		}
		type call struct {
			ep   int
			done func(Outcome)
		}
		var open []call
		for step := range 4000 {
			switch r := script.IntN(100); {
			case r < 50:
				ep, done := b.Pick(Request{})
				if h.hosts[ep].level == levelUnhealthy {
					t.Fatalf("seed %d step %d: picked unhealthy endpoint %d", seed, step, ep)
				}
				open = append(open, call{ep, done})
			case r < 95 && len(open) > 0:
				i := script.IntN(len(open))
				c := open[i]
				open = slices.Delete(open, i, i+1)
				c.done(outcome(c.ep))
			case r < 97:
				b.Sweep(clock.Now())
			default:
				clock.Advance(time.Duration(script.Int64N(int64(time.Second))))
			}
			checkHealthInvariants(t, h)
			if t.Failed() {
				t.Fatalf("seed %d step %d", seed, step)
			}
		}
		for _, c := range open {
			c.done(outcome(c.ep))
		}
		if got := b.InFlight(); !slices.Equal(got, make([]int64, n)) {
			t.Errorf("seed %d: InFlight() = %v, want zeros", seed, got)
		}
		unhealthy := 0
		for _, e := range events {
			if e.Kind != EventHealth || !slices.Contains(healthLevelNames[:], e.Detail) {
				t.Errorf("seed %d: event %+v", seed, e)
			}
			if e.Detail == "unhealthy" {
				unhealthy++
			}
		}
		if unhealthy != b.Ejections() {
			t.Errorf("seed %d: %d unhealthy events, Ejections() = %d", seed, unhealthy, b.Ejections())
		}
		if n >= 2 && b.Ejections() == 0 {
			t.Errorf("seed %d, %d endpoints: endpoint 0 failed 80%% of requests and 1 was slow, but no endpoint was ever unhealthy", seed, n)
		}
	}
}

// checkHealthInvariants checks the health wrapper's bookkeeping.
func checkHealthInvariants(t *testing.T, h *health) {
	t.Helper()
	var watched []int
	unhealthy, ramping := 0, 0
	for ep, s := range h.hosts {
		if s.level != levelHealthy || s.ramping {
			watched = append(watched, ep)
		}
		if s.level == levelUnhealthy {
			unhealthy++
		}
		f := h.w.get(ep)
		if s.ramping {
			ramping++
			if s.level != levelHealthy || f < s.rampFrom || f > 1 {
				t.Errorf("endpoint %d ramping at level %v with factor %v from %v", ep, s.level, f, s.rampFrom)
			}
		} else if f != h.cfg.weights[s.level] {
			t.Errorf("endpoint %d at level %v has factor %v, want %v", ep, s.level, f, h.cfg.weights[s.level])
		}
	}
	if !slices.Equal(watched, h.watched) {
		t.Errorf("watched %v, want %v", h.watched, watched)
	}
	if unhealthy != h.nUnhealthy || unhealthy > h.limit {
		t.Errorf("%d unhealthy, counted %d, cap %d", unhealthy, h.nUnhealthy, h.limit)
	}
	if ramping != h.nRamping {
		t.Errorf("%d ramping, counted %d", ramping, h.nRamping)
	}
	var scaled []int
	for ep := range h.hosts {
		if h.w.get(ep) < 1 {
			scaled = append(scaled, ep)
		}
	}
	if !slices.Equal(scaled, h.w.scaled) {
		t.Errorf("weighting scales %v, want %v", h.w.scaled, scaled)
	}
	for ep, w := range h.windows {
		var sum healthWindow
		for _, b := range h.buckets[ep*healthBuckets : (ep+1)*healthBuckets] {
			if b.idx > w.head-healthBuckets && b.idx <= w.head {
				sum.reqs += b.reqs
				sum.fails += b.fails
				sum.latency += b.latency
			} else if b.reqs != 0 || b.fails != 0 || b.latency != 0 {
				t.Errorf("endpoint %d: bucket %+v outside the window ending in %d is not zero", ep, b, w.head)
			}
		}
		sum.head = w.head
		if sum != w {
			t.Errorf("endpoint %d: window sums %+v, buckets add up to %+v", ep, w, sum)
		}
	}
	if len(h.watched) > 0 {
		if !h.hasDue {
			t.Errorf("watched %v but no due time", h.watched)
		}
		for _, ep := range h.watched {
			if d := h.due(ep); d.Before(h.nextDue) {
				t.Errorf("endpoint %d is due at %v, before the next due time %v", ep, d, h.nextDue)
			}
		}
	}
}

// TestHealthOutsideEjectAllowsNoHost: with health outside eject and every
// host ejected, eject allows none; health passes that on ("no healthy
// upstream") instead of judging a host that was not picked.
func TestHealthOutsideEjectAllowsNoHost(t *testing.T) {
	b, err := New("p2c+eject(consecutive=1,max=1)+health", Env{N: 2, Rand: newRand(5), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ep, done := b.Pick(Request{})
		done(Outcome{Status: 503, Latency: time.Millisecond})
		if ep == NoHost {
			if got := b.InFlight(); !slices.Equal(got, []int64{0, 0}) {
				t.Errorf("InFlight() = %v after a pick of no host", got)
			}
			return
		}
		if i == 19 {
			t.Fatalf("host %d still picked after every host failed", ep)
		}
	}
}

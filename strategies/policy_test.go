package strategies

import (
	"container/heap"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyPresence(t *testing.T) {
	for _, tc := range []struct {
		spec                    string
		policy, retries, hedges bool
	}{
		{"round-robin", false, false, false},
		{"p2c+eject", false, false, false},
		{"least-inflight+circuit(max_inflight=3)+slowstart", false, false, false},
		{"round-robin+retry", true, true, false},
		{"round-robin+retry(attempts=1)", true, false, false},
		{"round-robin+hedge", true, false, true},
		{"p2c+retry+hedge", true, true, true},
		{"p2c+hedge(delay=5ms)+eject+retry(budget=20%)", true, true, true},
		{"ring-hash+retry(other_host=true)+health", true, true, false},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			b := newChecked(t, tc.spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}, "")
			p := b.Policy()
			if (p != nil) != tc.policy {
				t.Fatalf("Policy() = %v, want a policy: %v", p, tc.policy)
			}
			if p == nil {
				return
			}
			if p.Retries() != tc.retries || p.Hedges() != tc.hedges {
				t.Errorf("Retries(), Hedges() = %v, %v; want %v, %v", p.Retries(), p.Hedges(), tc.retries, tc.hedges)
			}
			if b.Policy() != p {
				t.Errorf("Policy() returns another policy at each call")
			}
		})
	}
}

func TestExcluding(t *testing.T) {
	for _, tc := range []struct {
		name             string
		hosts, exclude   []int
		want             []int
		wantHostsItself  bool
		wantDstUntouched bool
	}{
		{"none excluded", []int{0, 1, 2}, nil, []int{0, 1, 2}, false, false},
		{"one", []int{0, 1, 2}, []int{1}, []int{0, 2}, false, false},
		{"several, in any order, repeated", []int{0, 1, 2, 3, 4}, []int{4, 0, 4, 2}, []int{1, 3}, false, false},
		{"not among the hosts", []int{1, 3}, []int{0, 2, 7}, []int{1, 3}, false, false},
		{"all: the hosts themselves", []int{1, 3}, []int{3, 1}, []int{1, 3}, true, false},
		{"all of one", []int{5}, []int{5}, []int{5}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]int, 0, 8)
			got := excluding(dst, tc.hosts, tc.exclude)
			if !slices.Equal(got, tc.want) {
				t.Errorf("excluding(%v, %v) = %v, want %v", tc.hosts, tc.exclude, got, tc.want)
			}
			if same := &got[0] == &tc.hosts[0]; same != tc.wantHostsItself {
				t.Errorf("result is hosts itself: %v, want %v", same, tc.wantHostsItself)
			}
			if !tc.wantHostsItself && &got[0] != &dst[:1][0] {
				t.Errorf("result not built in dst")
			}
		})
	}
}

// triesOf makes one request's attempts as a client with other_host does:
// each pick excludes the hosts tried before. It makes n attempts, keeps
// each in flight until the request ends when hold is set, and returns the
// endpoints picked.
func triesOf(b *Balancer, req Request, n int, hold bool, o Outcome) []int {
	var tried []int
	var dones []func(Outcome)
	for range n {
		req.Exclude = tried
		ep, done := b.Pick(req)
		tried = append(tried, ep)
		if hold {
			dones = append(dones, done)
		} else {
			done(o)
		}
	}
	for _, done := range dones {
		done(o)
	}
	return tried
}

// TestOtherHostExcludes: with Exclude listing the hosts tried, a pick
// never returns to one of them while another host is allowed, whatever
// the strategy; once every host is excluded the pick falls back to all of
// them. Picks without Exclude see every host again afterwards.
func TestOtherHostExcludes(t *testing.T) {
	const n = 6
	for _, tc := range []struct {
		base     string
		keyed    bool
		requests int
	}{
		{"round-robin", false, 300},
		{"random", false, 300},
		{"p2c", false, 300},
		{"least-inflight", false, 300},
		{"least-inflight(ties=first)", false, 300},
		{"ring-hash", true, 60},
		{"ring-hash", false, 300},
		// Maglev rebuilds its table of 65537 entries at each change of
		// hosts, every excluding pick and the pick after it.
		{"maglev", true, 3},
		{"weighted-round-robin", false, 300},
		{"least-request", false, 300},
		{"peak-ewma", false, 300},
	} {
		for _, hold := range []bool{false, true} {
			spec := tc.base + "+retry(other_host=true)"
			t.Run(fmt.Sprintf("%s/keyed=%v/hold=%v", spec, tc.keyed, hold), func(t *testing.T) {
				b := newChecked(t, spec, Env{N: n, Rand: newRand(2), Clock: newFakeClock(), Weights: []float64{1, 2, 3, 1, 2, 3}}, "")
				for i := range tc.requests {
					req := Request{Key: mix64(uint64(i)), HasKey: tc.keyed}
					tried := triesOf(b, req, n+2, hold, ok200)
					if got := slices.Sorted(slices.Values(tried[:n])); !slices.Equal(got, seq(n)) {
						t.Fatalf("request %d: first %d attempts went to %v, want every host once", i, n, tried[:n])
					}
					for _, ep := range tried[n:] {
						if ep < 0 || ep >= n {
							t.Fatalf("request %d: with every host excluded, picked %d", i, ep)
						}
					}
					if tc.keyed {
						// Consistent hashing is undisturbed: the key's host is
						// the first attempt's.
						ep, done := b.Pick(Request{Key: req.Key, HasKey: true})
						done(ok200)
						if ep != tried[0] {
							t.Fatalf("request %d: key goes to %d after the retries, to %d before", i, ep, tried[0])
						}
					}
				}
				if in := b.InFlight(); !slices.Equal(in, make([]int64, n)) {
					t.Errorf("in flight after every request ended: %v", in)
				}
			})
		}
	}
}

// TestOtherHostRoundRobinResumes: picks without Exclude after excluded
// ones keep cycling over every host.
func TestOtherHostRoundRobinResumes(t *testing.T) {
	b := newChecked(t, "round-robin+retry(other_host=true)", Env{N: 4, Rand: newRand(1)}, "")
	var got []int
	pick := func(exclude ...int) {
		ep, done := b.Pick(Request{Exclude: exclude})
		done(ok200)
		got = append(got, ep)
	}
	pick()     // 0
	pick()     // 1
	pick(2)    // 3, skipping 2
	pick()     // 0, the cycle resumes after 3 with every host
	pick()     // 1
	pick()     // 2
	pick(3, 0) // 1, the next after 2 but 3 and 0
	pick(0, 1, 2, 3)
	pick()
	if want := []int{0, 1, 3, 0, 1, 2, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("picks %v, want %v", got, want)
	}
}

// TestOtherHostWithEject: with hosts ejected, retries avoid both the
// ejected hosts and those tried while another is allowed; with every
// host excluded the pick falls back to the hosts not ejected.
func TestOtherHostWithEject(t *testing.T) {
	const n = 6
	ejected := []int{1, 4}
	for _, spec := range []string{
		"round-robin+eject(consecutive=1,duration=1h,max=0.5)+retry(other_host=true)",
		"round-robin+retry(other_host=true)+eject(consecutive=1,duration=1h,max=0.5)",
		"p2c+eject(consecutive=1,duration=1h,max=0.5)+retry(other_host=true)",
		"least-inflight+retry(other_host=true)+eject(consecutive=1,duration=1h,max=0.5)",
		"ring-hash+eject(consecutive=1,duration=1h,max=0.5)+retry(other_host=true)",
	} {
		t.Run(spec, func(t *testing.T) {
			b := newChecked(t, spec, Env{N: n, Rand: newRand(3), Clock: newFakeClock()}, "")
			for i := 0; !slices.Equal(b.Ejected(), ejected); i++ {
				if i > 1000 {
					t.Fatalf("hosts %v not ejected; ejected: %v", ejected, b.Ejected())
				}
				ep, done := b.Pick(Request{Key: mix64(uint64(i)), HasKey: true})
				if slices.Contains(ejected, ep) {
					done(fail503)
				} else {
					done(ok200)
				}
			}
			allowed := []int{0, 2, 3, 5}
			for i := range 200 {
				req := Request{Key: mix64(uint64(1000 + i)), HasKey: true}
				var tried []int
				for range len(allowed) {
					req.Exclude = tried
					ep, done := b.Pick(req)
					done(ok200)
					if !slices.Contains(allowed, ep) || slices.Contains(tried, ep) {
						t.Fatalf("request %d: tried %v, then picked %d; want one of %v not tried", i, tried, ep, allowed)
					}
					tried = append(tried, ep)
				}
				req.Exclude = seq(n)
				ep, done := b.Pick(req)
				done(ok200)
				if !slices.Contains(allowed, ep) {
					t.Fatalf("request %d: every host excluded, picked %d; want one of %v", i, ep, allowed)
				}
				// Every allowed host excluded, ejected ones not: the pick
				// falls back to the allowed hosts, never to NoHost.
				req.Exclude = allowed
				ep, done = b.Pick(req)
				done(ok200)
				if !slices.Contains(allowed, ep) {
					t.Fatalf("request %d: the allowed hosts excluded, picked %d; want one of %v", i, ep, allowed)
				}
			}
		})
	}
}

// An avoided host is one pick's choice, not a change of the host set: slow
// start does not restart the host a retry avoided.
func TestOtherHostKeepsSlowStart(t *testing.T) {
	clock := newFakeClock()
	b := newChecked(t, "round-robin+slowstart(window=10s)+retry(other_host=true)", Env{N: 4, Rand: newRand(1), Clock: clock}, "")
	clock.Advance(time.Minute) // past every host's window
	counts := make([]int, 4)
	for i := range 4000 {
		req := Request{}
		if i%100 == 0 {
			req.Exclude = []int{0}
		}
		ep, done := b.Pick(req)
		done(ok200)
		counts[ep]++
	}
	for i, c := range counts {
		if c < 900 {
			t.Errorf("host %d got %d of 4000 picks (%v); avoiding it for one pick restarted its slow start", i, c, counts)
		}
	}
}

// policyDriver runs requests through a Balancer and its Policy as a client
// does, in virtual time: each request's attempts are picks of the
// Balancer, answered by answer after the latency it gives; a failed
// attempt is retried when the Policy allows it, after the backoff it
// draws, on another host when it says OtherHost.
type policyDriver struct {
	b      *Balancer
	p      *Policy
	clock  *fakeClock
	answer func(ep int) Outcome
	queue  eventQueue
	res    driveResult
}

type driveResult struct {
	requests, failed, attempts int
	perHost                    []int // attempts per endpoint
	maxAttempts                int   // the most attempts of one request
}

// driven is a request under way.
type driven struct {
	req     Request
	tried   []int
	retries int
}

func newPolicyDriver(t *testing.T, spec string, n int, seed uint64, answer func(ep int) Outcome) *policyDriver {
	t.Helper()
	clock := newFakeClock()
	b := newChecked(t, spec, Env{N: n, Rand: newRand(seed), Clock: clock}, "")
	if b.Policy() == nil {
		t.Fatalf("%s: no policy", spec)
	}
	return &policyDriver{b: b, p: b.Policy(), clock: clock, answer: answer, res: driveResult{perHost: make([]int, n)}}
}

// run sends requests, one every every, and runs until all have ended.
func (d *policyDriver) run(requests int, every time.Duration) driveResult {
	start := d.clock.Now()
	for i := range requests {
		d.queue.at(start.Add(time.Duration(i)*every), func() {
			d.res.requests++
			d.p.Start()
			d.launch(&driven{}, false)
		})
	}
	for d.queue.Len() > 0 {
		ev := heap.Pop(&d.queue).(*queued)
		if dt := ev.at.Sub(d.clock.Now()); dt > 0 {
			d.clock.Advance(dt)
		}
		ev.fn()
	}
	return d.res
}

// launch sends an attempt of r.
func (d *policyDriver) launch(r *driven, retry bool) {
	req := r.req
	if retry && d.p.OtherHost() {
		req.Exclude = r.tried
	}
	ep, done := d.b.Pick(req)
	r.tried = append(r.tried, ep)
	d.res.attempts++
	d.res.perHost[ep]++
	d.res.maxAttempts = max(d.res.maxAttempts, len(r.tried))
	o := d.answer(ep)
	d.queue.at(d.clock.Now().Add(o.Latency), func() {
		d.p.Observe(o)
		done(o)
		if retry {
			d.p.RetryEnded()
		}
		if !o.Failed() {
			return
		}
		wait, ok := d.p.Retry(o, r.retries, r.req)
		if !ok {
			d.res.failed++
			return
		}
		r.retries++
		d.queue.at(d.clock.Now().Add(wait), func() { d.launch(r, true) })
	})
}

// eventQueue is a queue of functions to run at given times, in order of
// time, then of queueing.
type eventQueue struct {
	items []*queued
	seq   int
}

type queued struct {
	at  time.Time
	seq int
	fn  func()
}

func (q *eventQueue) at(t time.Time, fn func()) {
	q.seq++
	heap.Push(q, &queued{at: t, seq: q.seq, fn: fn})
}

func (q *eventQueue) Len() int { return len(q.items) }
func (q *eventQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	return a.at.Before(b.at) || a.at.Equal(b.at) && a.seq < b.seq
}
func (q *eventQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *eventQueue) Push(x any)    { q.items = append(q.items, x.(*queued)) }
func (q *eventQueue) Pop() any {
	x := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return x
}

// firstFails answers 503 in 1 ms from endpoint 0 and 200 in 10 ms from
// the others.
func firstFails(ep int) Outcome {
	if ep == 0 {
		return Outcome{Status: 503, Latency: time.Millisecond}
	}
	return Outcome{Status: 200, Latency: 10 * time.Millisecond}
}

// TestPolicyScripted runs requests through policies against instances of
// which the first always fails fast.
func TestPolicyScripted(t *testing.T) {
	const n = 10
	for _, tc := range []struct {
		name           string
		spec           string
		requests       int
		every          time.Duration
		minFailed      float64 // share of requests failed
		maxFailed      float64
		maxAttempts    int
		maxAmplify     float64 // attempts per request at most
		minShareOfHost float64 // least share of the attempts that reach endpoint 0
	}{
		{
			// A retry goes elsewhere: none fails.
			name: "round robin, other host", spec: "round-robin+retry(attempts=2,other_host=true)",
			requests: 5000, every: time.Second, maxFailed: 0, maxAttempts: 2, maxAmplify: 1.12,
		},
		{
			name: "round robin, other host, concurrent", spec: "round-robin+retry(attempts=2,other_host=true)",
			requests: 5000, every: time.Millisecond, maxFailed: 0, maxAttempts: 2, maxAmplify: 1.12,
		},
		{
			// A fresh pick lands on 0 again with probability 1/10: 1% of
			// requests fail.
			name: "random, fresh picks", spec: "random+retry(attempts=2)",
			requests: 20000, every: time.Second, minFailed: 0.007, maxFailed: 0.013, maxAttempts: 2, maxAmplify: 1.11,
		},
		{
			name: "random, other host", spec: "random+retry(attempts=2,other_host=true)",
			requests: 5000, every: time.Second, maxFailed: 0, maxAttempts: 2, maxAmplify: 1.11,
		},
		{
			// Idle instances: least-inflight breaks the tie at random, so a
			// request fails when all three attempts draw 0: 0.1%.
			name: "least inflight, sequential", spec: "least-inflight+retry(attempts=3)",
			requests: 10000, every: time.Second, minFailed: 0.0003, maxFailed: 0.0025, maxAttempts: 3, maxAmplify: 1.12,
		},
		{
			// Under load the instance that fails fast has the fewest
			// requests in flight: least-inflight sends it about half the
			// first attempts, and a retry, a fresh pick, often returns to
			// it: several times its fair share of attempts, and requests
			// that fail all three.
			name: "least inflight, concurrent", spec: "least-inflight+retry(attempts=3)",
			requests: 5000, every: time.Millisecond, minFailed: 0.02, maxFailed: 0.1, maxAttempts: 3, maxAmplify: 1.6,
			minShareOfHost: 0.3,
		},
		{
			name: "least inflight, concurrent, other host", spec: "least-inflight+retry(attempts=3,other_host=true)",
			requests: 5000, every: time.Millisecond, maxFailed: 0, maxAttempts: 2, maxAmplify: 1.6,
		},
		{
			// A budget of 20% without reserve caps the retries at 20% of
			// the requests: the others that met the failing instance fail.
			name: "least inflight, concurrent, budget", spec: "least-inflight+retry(attempts=3,budget=20%,min_per_s=0)",
			requests: 5000, every: time.Millisecond, minFailed: 0.1, maxFailed: 0.4, maxAttempts: 3, maxAmplify: 1.2001,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newPolicyDriver(t, tc.spec, n, 4, firstFails)
			res := d.run(tc.requests, tc.every)
			failed := float64(res.failed) / float64(res.requests)
			amplify := float64(res.attempts) / float64(res.requests)
			t.Logf("%s: %d requests, %d failed (%.3f%%), %.3f attempts per request, at most %d; per host %v",
				tc.spec, res.requests, res.failed, 100*failed, amplify, res.maxAttempts, res.perHost)
			if res.requests != tc.requests {
				t.Fatalf("%d requests ran, want %d", res.requests, tc.requests)
			}
			if failed < tc.minFailed || failed > tc.maxFailed {
				t.Errorf("%.3f%% of requests failed, want %.3f%% to %.3f%%", 100*failed, 100*tc.minFailed, 100*tc.maxFailed)
			}
			if res.maxAttempts > tc.maxAttempts {
				t.Errorf("a request made %d attempts, want at most %d", res.maxAttempts, tc.maxAttempts)
			}
			if amplify > tc.maxAmplify {
				t.Errorf("%.3f attempts per request, want at most %.3f", amplify, tc.maxAmplify)
			}
			if share := float64(res.perHost[0]) / float64(res.attempts); share < tc.minShareOfHost {
				t.Errorf("%.3f of the attempts went to the failing host, want at least %.3f", share, tc.minShareOfHost)
			}
			if in := d.b.InFlight(); !slices.Equal(in, make([]int64, n)) {
				t.Errorf("in flight at the end: %v", in)
			}
			if l := d.p.retry; l.active != 0 {
				t.Errorf("%d retries still hold a place at the end", l.active)
			}
			if s := d.p.Stats(); s.Retries != int64(res.attempts-res.requests) {
				t.Errorf("Stats().Retries = %d, want the %d attempts beyond the first", s.Retries, res.attempts-res.requests)
			}
		})
	}
}

// TestPolicySerial drives a policy on a Balancer set serial: the same
// requests give the same results as with the lock.
func TestPolicySerial(t *testing.T) {
	spec := "p2c+retry(attempts=3,budget=20%,concurrency_budget=20%)+hedge"
	run := func(serial bool) driveResult {
		d := newPolicyDriver(t, spec, 5, 9, firstFails)
		if serial {
			d.b.SetSerial()
		}
		return d.run(2000, time.Millisecond)
	}
	a, b := run(false), run(true)
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(driveResult{})); diff != "" {
		t.Errorf("serial run differs (-locked +serial):\n%s", diff)
	}
}

// TestPolicyConcurrent uses a policy from many goroutines at once, for the
// race detector.
func TestPolicyConcurrent(t *testing.T) {
	b := newChecked(t, "least-inflight+retry(attempts=3,other_host=true,budget=20%,concurrency_budget=20%)+hedge(delay=p95)+eject",
		Env{N: 8, Rand: newRand(5), Clock: newFakeClock()}, "")
	p := b.Policy()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				p.Start()
				var tried []int
				for retries := 0; ; retries++ {
					req := Request{Exclude: tried}
					ep, done := b.Pick(req)
					tried = append(tried, ep)
					o := Outcome{Status: 200, Latency: time.Duration(i%50) * time.Millisecond}
					if (ep+g+i)%4 == 0 {
						o.Status = 503
					}
					p.Observe(o)
					done(o)
					if retries > 0 {
						p.RetryEnded()
					}
					if !o.Failed() {
						break
					}
					if _, ok := p.Retry(o, retries, req); !ok {
						break
					}
				}
				if _, ok := p.HedgeDelay(); ok && i%7 == 0 {
					p.Hedged()
					p.HedgeWon()
				}
				_ = p.Stats()
			}
		})
	}
	wg.Wait()
	if in := b.InFlight(); !slices.Equal(in, make([]int64, 8)) {
		t.Errorf("in flight at the end: %v", in)
	}
	if p.retry.active != 0 {
		t.Errorf("%d retries still hold a place", p.retry.active)
	}
}

// TestPolicySpecRoundTrip: specs with retry and hedge parameters print in
// canonical form, which parses back to the same spec and builds the same
// policy.
func TestPolicySpecRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{"round-robin+retry", "round-robin+retry"},
		{" round-robin + retry( attempts = 3 , on = 5xx|reset , budget = 20% ) + hedge ( delay = p99.9 , max = 3 ) ",
			"round-robin+retry(attempts=3,budget=20%,on=5xx|reset)+hedge(delay=p99.9,max=3)"},
		{"p2c+hedge(max=2,delay=20ms)+eject(consecutive=3)+retry(other_host=true)",
			"p2c+hedge(delay=20ms,max=2)+eject(consecutive=3)+retry(other_host=true)"},
		{"least-inflight+retry(min_concurrency=2,concurrency_budget=50%,budget_window=30s,min_per_s=5,budget=0.1," +
			"idempotent_only=false,other_host=true,max_backoff=1s,backoff=10ms,per_try_timeout=200ms,on=gateway-error|connect|timeout,attempts=4)",
			"least-inflight+retry(attempts=4,backoff=10ms,budget=0.1,budget_window=30s,concurrency_budget=50%,idempotent_only=false," +
				"max_backoff=1s,min_concurrency=2,min_per_s=5,on=gateway-error|connect|timeout,other_host=true,per_try_timeout=200ms)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			s, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
			again, err := Parse(s.String())
			if err != nil {
				t.Fatalf("Parse(%q): %v", s.String(), err)
			}
			if diff := cmp.Diff(s, again); diff != "" {
				t.Errorf("String() does not parse back (-want +got):\n%s", diff)
			}
			env := Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}
			p1 := newChecked(t, tc.spec, env, "").Policy()
			p2 := newChecked(t, s.String(), env, "").Policy()
			if p1.retry != nil && !cmp.Equal(p1.retry.cfg, p2.retry.cfg) {
				t.Errorf("retry configs differ: %+v and %+v", p1.retry.cfg, p2.retry.cfg)
			}
			if p1.hedge != nil && p1.hedge.cfg != p2.hedge.cfg {
				t.Errorf("hedge configs differ: %+v and %+v", p1.hedge.cfg, p2.hedge.cfg)
			}
		})
	}
}

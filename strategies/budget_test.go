package strategies

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTokenBucketSizes(t *testing.T) {
	for _, tc := range []struct {
		window        time.Duration
		share         float64
		minPerS       int
		cost, reserve int64
	}{
		{10 * time.Second, 0.2, 10, 5000, 10 * 10 * 5000}, // Finagle's defaults: 100 retries in reserve
		{10 * time.Second, 0.2, 0, 5000, 0},
		{time.Second, 1, 3, 1000, 3000},
		{30 * time.Second, 0.5, 2, 2000, 2 * 30 * 2000},
		{10 * time.Second, 0.05, 1, 20000, 10 * 20000},
		{10 * time.Second, 0.25, 1, 4000, 10 * 4000},
	} {
		b := newTokenBucket(tc.window, tc.share, tc.minPerS)
		if b.cost != tc.cost || b.reserve != tc.reserve || b.slice != tc.window/10 {
			t.Errorf("newTokenBucket(%v, %v, %d): cost %d, reserve %d, slice %v; want %d, %d, %v",
				tc.window, tc.share, tc.minPerS, b.cost, b.reserve, b.slice, tc.cost, tc.reserve, tc.window/10)
		}
	}
	// Every whole percentage costs exactly 100000/p tokens when that is a
	// whole number: the share's rounding takes none away.
	for p := 1; p <= 100; p++ {
		if 100000%p != 0 {
			continue
		}
		cfg := retryConfigOf(t, fmt.Sprintf("p2c+retry(budget=%d%%)", p))
		if got := newTokenBucket(10*time.Second, cfg.Budget, 0).cost; got != int64(100000/p) {
			t.Errorf("budget=%d%%: a retry costs %d tokens, want %d", p, got, 100000/p)
		}
	}
}

// budgetRig is a Balancer with a retry budget, a fake clock and its
// events.
type budgetRig struct {
	clock  *fakeClock
	b      *Balancer
	p      *Policy
	events []Event
}

func newBudgetRig(t *testing.T, spec string) *budgetRig {
	t.Helper()
	r := &budgetRig{clock: newFakeClock()}
	r.b, r.p = newPolicy(t, spec, 4, r.clock, func(e Event) { r.events = append(r.events, e) })
	return r
}

// starts records n requests.
func (r *budgetRig) starts(n int) {
	for range n {
		r.p.Start()
	}
}

// retries asks for up to n retries (each ended at once) and returns how
// many were allowed.
func (r *budgetRig) retries(n int) int {
	allowed := 0
	for range n {
		if _, ok := r.p.Retry(fail503, 0, Request{}); ok {
			allowed++
			r.p.RetryEnded()
		}
	}
	return allowed
}

// retriesUntilRefused asks for retries until one is refused (at most
// limit) and returns how many were allowed.
func (r *budgetRig) retriesUntilRefused(t *testing.T, limit int) int {
	t.Helper()
	for n := range limit {
		if _, ok := r.p.Retry(fail503, 0, Request{}); !ok {
			return n
		}
		r.p.RetryEnded()
	}
	t.Fatalf("%d retries allowed, none refused", limit)
	return limit
}

// eventDetails returns the Detail of each event, all of which must be
// budget events of no host.
func eventDetails(events []Event) []string {
	var d []string
	for _, e := range events {
		if e.Kind != EventBudget || e.Endpoint != NoHost {
			d = append(d, fmt.Sprintf("unexpected %+v", e))
			continue
		}
		d = append(d, e.Detail)
	}
	return d
}

func budgetEvent(at time.Duration, detail string) Event {
	return Event{Time: epoch0.Add(at), Endpoint: NoHost, Kind: EventBudget, Detail: detail}
}

// TestRetryBudgetShare: without a reserve, 100 requests pay for 20
// retries at 20%; the 21st is refused, and each 5 more requests pay for
// one more.
func TestRetryBudgetShare(t *testing.T) {
	r := newBudgetRig(t, "round-robin+retry(attempts=2,budget=20%,min_per_s=0)")
	if n := r.retries(1); n != 0 {
		t.Fatalf("before any request: %d retries allowed, want 0", n)
	}
	r.events = nil
	r.starts(100)
	if n := r.retriesUntilRefused(t, 1000); n != 20 {
		t.Errorf("after 100 requests: %d retries allowed, want 20", n)
	}
	if n := r.retries(5); n != 0 {
		t.Errorf("budget spent: %d more retries allowed, want 0", n)
	}
	r.starts(4)
	if n := r.retries(1); n != 0 {
		t.Errorf("4 requests more (4000 of 5000 tokens): %d retries allowed, want 0", n)
	}
	r.starts(1)
	if n := r.retries(1); n != 1 {
		t.Errorf("5 requests more: %d retries allowed, want 1", n)
	}
	if s := r.p.Stats(); s.Retries != 21 || s.RetriesRefused != 1+1+5+1 {
		t.Errorf("Stats() = %+v, want 21 retries, 8 refused", s)
	}
}

// TestRetryBudgetShareOther checks other shares: n requests pay for
// floor(share × n) retries.
func TestRetryBudgetShareOther(t *testing.T) {
	for _, tc := range []struct {
		budget   string
		requests int
		want     int
	}{
		{"10%", 100, 10},
		{"50%", 7, 3},
		{"100%", 12, 12},
		{"1%", 250, 2},
		{"33%", 100, 33},
		{"0.25", 40, 10},
	} {
		t.Run(tc.budget, func(t *testing.T) {
			r := newBudgetRig(t, "round-robin+retry(attempts=2,min_per_s=0,budget="+tc.budget+")")
			r.starts(tc.requests)
			if n := r.retriesUntilRefused(t, 10000); n != tc.want {
				t.Errorf("budget=%s after %d requests: %d retries allowed, want %d", tc.budget, tc.requests, n, tc.want)
			}
		})
	}
}

// TestRetryBudgetReserve: the reserve alone (no request) allows min_per_s
// × window retries, then refuses.
func TestRetryBudgetReserve(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want int
	}{
		{"round-robin+retry(budget=20%,min_per_s=10,budget_window=10s)", 100},
		{"round-robin+retry(budget=20%)", 100}, // the defaults are Finagle's
		{"round-robin+retry(budget=50%,min_per_s=3,budget_window=2s)", 6},
		{"round-robin+retry(budget=20%,min_per_s=1,budget_window=60s)", 60},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			r := newBudgetRig(t, tc.spec)
			if n := r.retriesUntilRefused(t, 1000); n != tc.want {
				t.Errorf("no requests: %d retries allowed, want %d", n, tc.want)
			}
		})
	}
	// The reserve adds to the deposits.
	r := newBudgetRig(t, "round-robin+retry(budget=20%,min_per_s=10)")
	r.starts(100)
	if n := r.retriesUntilRefused(t, 1000); n != 120 {
		t.Errorf("100 requests and the reserve: %d retries allowed, want 120", n)
	}
}

// TestRetryBudgetAging: deposits and withdrawals leave the balance once
// the window has slid past the slice they were made in (slices of a tenth
// of the window, starting at the first use).
func TestRetryBudgetAging(t *testing.T) {
	r := newBudgetRig(t, "round-robin+retry(budget=20%,min_per_s=0,budget_window=10s)")
	r.starts(100) // at 0: 100000 tokens, in slice 0
	r.clock.Advance(5 * time.Second)
	if n := r.retriesUntilRefused(t, 1000); n != 20 { // at 5s: -100000, in slice 5
		t.Fatalf("at 5s: %d retries allowed, want 20", n)
	}
	r.clock.Advance(4900 * time.Millisecond) // 9.9s: slice 9, nothing aged yet
	r.starts(5)
	if n := r.retries(1); n != 1 {
		t.Errorf("at 9.9s, 5 new requests: %d retries allowed, want 1", n)
	}
	// At 10s slice 0 (100 requests) leaves the window; slice 5 (20 retries)
	// stays: the balance is -100000.
	r.clock.Advance(100 * time.Millisecond)
	r.starts(20)
	if n := r.retries(5); n != 0 {
		t.Errorf("at 10s, the requests of 0s aged out: %d retries allowed, want 0", n)
	}
	// At 15s the retries of 5s age out too; what stays is slice 9 (5
	// requests, 1 retry) and slice 10 (20 requests): 20000 tokens.
	r.clock.Advance(5 * time.Second)
	if n := r.retriesUntilRefused(t, 1000); n != 4 {
		t.Errorf("at 15s, the retries of 5s aged out: %d retries allowed, want 4", n)
	}
	// A jump of more than a window empties every slice.
	r.clock.Advance(time.Hour)
	r.starts(10)
	if n := r.retriesUntilRefused(t, 1000); n != 2 {
		t.Errorf("an hour later, 10 requests: %d retries allowed, want 2", n)
	}
}

// TestRetryBudgetEvents: one "exhausted" event at the first refusal, none
// for further refusals, one "available" at the next allowed retry.
func TestRetryBudgetEvents(t *testing.T) {
	r := newBudgetRig(t, "round-robin+retry(attempts=2,budget=20%,min_per_s=0)")
	r.starts(10)
	if n := r.retries(2); n != 2 {
		t.Fatalf("10 requests: %d retries allowed, want 2", n)
	}
	if len(r.events) != 0 {
		t.Fatalf("events before a refusal: %v", r.events)
	}
	r.clock.Advance(time.Second)
	if n := r.retries(3); n != 0 {
		t.Fatalf("budget spent: %d retries allowed", n)
	}
	r.clock.Advance(time.Second)
	r.starts(10)
	if n := r.retries(2); n != 2 {
		t.Fatalf("10 more requests: %d retries allowed, want 2", n)
	}
	r.clock.Advance(time.Second)
	r.retries(1) // refused again
	want := []Event{
		budgetEvent(time.Second, "exhausted"),
		budgetEvent(2*time.Second, "available"),
		budgetEvent(3*time.Second, "exhausted"),
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// A retry the conditions, the attempts or idempotence refuse is no
	// refusal of the budget.
	r.events = nil
	r.p.Retry(fail503, 1, Request{})
	r.p.Retry(Outcome{Status: 404}, 0, Request{})
	r.p.Retry(fail503, 0, Request{NonIdempotent: true})
	if len(r.events) != 0 {
		t.Errorf("events for retries the policy itself refused: %v", r.events)
	}
	if s := r.p.Stats(); s.Retries != 4 || s.RetriesRefused != 4 {
		t.Errorf("Stats() = %+v, want 4 retries, 4 refused", s)
	}
}

// TestRetryConcurrencyBudget: with N attempts in flight, max(floor(share ×
// N), min_concurrency) retries may be in flight; RetryEnded frees a place.
func TestRetryConcurrencyBudget(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		inflight int
		want     int
	}{
		{"round-robin+retry(concurrency_budget=20%,min_concurrency=3)", 0, 3},
		{"round-robin+retry(concurrency_budget=20%,min_concurrency=3)", 5, 3},
		{"round-robin+retry(concurrency_budget=20%,min_concurrency=3)", 19, 3},
		{"round-robin+retry(concurrency_budget=20%,min_concurrency=3)", 20, 4},
		{"round-robin+retry(concurrency_budget=20%,min_concurrency=3)", 27, 5},
		{"round-robin+retry(concurrency_budget=20%,min_concurrency=3)", 50, 10},
		{"round-robin+retry(concurrency_budget=20%)", 100, 20}, // min_concurrency defaults to 3
		{"round-robin+retry(concurrency_budget=20%)", 4, 3},
		{"round-robin+retry(concurrency_budget=50%,min_concurrency=0)", 0, 0},
		{"round-robin+retry(concurrency_budget=50%,min_concurrency=0)", 7, 3},
		{"round-robin+retry(concurrency_budget=100%,min_concurrency=1)", 6, 6},
		// floor(0.29 × 100) is 29, though 0.29 × 100 is 28.999... in floats.
		{"round-robin+retry(concurrency_budget=29%,min_concurrency=1)", 100, 29},
		{"round-robin+retry(concurrency_budget=57%,min_concurrency=1)", 100, 57},
	} {
		t.Run(fmt.Sprintf("%s/inflight=%d", tc.spec, tc.inflight), func(t *testing.T) {
			var events []Event
			b, p := newPolicy(t, tc.spec, 5, newFakeClock(), func(e Event) { events = append(events, e) })
			var dones []func(Outcome)
			for range tc.inflight {
				_, done := b.Pick(Request{})
				dones = append(dones, done)
			}
			held := 0
			for ; held <= tc.want; held++ {
				if _, ok := p.Retry(fail503, 0, Request{}); !ok {
					break
				}
			}
			if held != tc.want {
				t.Fatalf("%d attempts in flight: %d retries in flight allowed, want %d", tc.inflight, held, tc.want)
			}
			if len(events) != 1 || events[0].Detail != "exhausted" {
				t.Errorf("events at the first refusal: %v, want one exhausted", events)
			}
			if held > 0 {
				p.RetryEnded()
				if _, ok := p.Retry(fail503, 0, Request{}); !ok {
					t.Errorf("RetryEnded freed no place")
				}
				if _, ok := p.Retry(fail503, 0, Request{}); ok {
					t.Errorf("RetryEnded freed more than one place")
				}
				if got := eventDetails(events); !slices.Equal(got, []string{"exhausted", "available", "exhausted"}) {
					t.Errorf("events: %v, want exhausted, available, exhausted", got)
				}
			}
			for range held {
				p.RetryEnded()
			}
			for _, done := range dones {
				done(ok200)
			}
		})
	}
}

// TestRetryConcurrencyBudgetFollowsInflight: the limit moves with the
// attempts in flight, counted over every endpoint.
func TestRetryConcurrencyBudgetFollowsInflight(t *testing.T) {
	b, p := newPolicy(t, "least-inflight+retry(concurrency_budget=25%,min_concurrency=1)", 4, newFakeClock(), nil)
	var dones []func(Outcome)
	pick := func(n int) {
		for range n {
			_, done := b.Pick(Request{})
			dones = append(dones, done)
		}
	}
	retry := func() bool {
		_, ok := p.Retry(fail503, 0, Request{})
		return ok
	}
	if !retry() || retry() {
		t.Fatalf("nothing in flight: want exactly min_concurrency (1) retry")
	}
	pick(8) // limit 2
	if !retry() || retry() {
		t.Fatalf("8 in flight: want a second retry, not a third")
	}
	for _, done := range dones[:4] {
		done(ok200) // 4 in flight: limit 1, with 2 held
	}
	p.RetryEnded()
	if retry() {
		t.Errorf("4 in flight, 1 retry held: a second allowed, want none")
	}
	p.RetryEnded()
	if !retry() {
		t.Errorf("4 in flight, no retry held: none allowed, want one")
	}
	p.RetryEnded()
	for _, done := range dones[4:] {
		done(ok200)
	}
}

// TestRetryBothBudgets: a retry the concurrency budget refuses costs the
// token bucket nothing.
func TestRetryBothBudgets(t *testing.T) {
	r := newBudgetRig(t, "round-robin+retry(budget=20%,min_per_s=0,concurrency_budget=20%,min_concurrency=1)")
	r.starts(10) // 2 retries' worth
	if _, ok := r.p.Retry(fail503, 0, Request{}); !ok {
		t.Fatal("first retry refused")
	}
	if _, ok := r.p.Retry(fail503, 0, Request{}); ok {
		t.Fatal("second retry in flight allowed over min_concurrency=1")
	}
	r.p.RetryEnded()
	if _, ok := r.p.Retry(fail503, 0, Request{}); !ok {
		t.Fatal("the token the concurrency refusal did not spend is missing")
	}
	r.p.RetryEnded()
	if _, ok := r.p.Retry(fail503, 0, Request{}); ok {
		t.Fatal("a third retry allowed by 10 requests at 20%")
	}
	want := []string{"exhausted", "available", "exhausted"}
	if diff := cmp.Diff(want, eventDetails(r.events)); diff != "" {
		t.Errorf("event details (-want +got):\n%s", diff)
	}
}

// TestRetryWithoutBudget: nothing limits retries without a budget, and
// Start deposits nothing.
func TestRetryWithoutBudget(t *testing.T) {
	r := newBudgetRig(t, "round-robin+retry(attempts=2)")
	if r.p.retry.bucket != nil {
		t.Fatal("a token bucket without a budget")
	}
	r.starts(3)
	if n := r.retries(10000); n != 10000 {
		t.Errorf("%d of 10000 retries allowed, want all", n)
	}
	// Held retries do not count either.
	for range 100 {
		if _, ok := r.p.Retry(fail503, 0, Request{}); !ok {
			t.Fatal("retry refused without a budget")
		}
	}
	if len(r.events) != 0 {
		t.Errorf("events without a budget: %v", r.events)
	}
}

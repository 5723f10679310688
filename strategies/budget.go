package strategies

import "time"

// budgetSlices is how many slices the retry budget's window is made of, as
// Finagle's leaky token bucket divides its ttl.
const budgetSlices = 10

// tokenBucket is Finagle's RetryBudget: a leaky token bucket whose balance
// is the net of the deposits and withdrawals of the last window (kept in
// budgetSlices slices, the oldest dropped as time moves on) plus a fixed
// reserve. Each request deposits depositTokens; a retry withdraws cost =
// depositTokens / share and is allowed only when the balance covers it.
type tokenBucket struct {
	slice   time.Duration
	net     [budgetSlices]int64
	cur     int64 // index of the slice now (time / slice), since start
	started bool
	start   time.Time
	cost    int64
	reserve int64
}

// depositTokens is what one request deposits (Finagle's 1000, so that a
// share like 20% costs a whole number of tokens).
const depositTokens = 1000

func newTokenBucket(window time.Duration, share float64, minPerS int) *tokenBucket {
	cost := int64(depositTokens / share)
	return &tokenBucket{
		slice:   window / budgetSlices,
		cost:    cost,
		reserve: int64(minPerS) * int64(window/time.Second) * cost,
	}
}

// advance moves the window to now, dropping the slices that left it.
func (t *tokenBucket) advance(now time.Time) {
	if !t.started {
		t.started, t.start = true, now
	}
	idx := int64(now.Sub(t.start) / t.slice)
	if idx <= t.cur {
		return
	}
	for i := t.cur + 1; i <= idx && i <= t.cur+budgetSlices; i++ {
		t.net[i%budgetSlices] = 0
	}
	t.cur = idx
}

func (t *tokenBucket) balance() int64 {
	b := t.reserve
	for _, n := range t.net {
		b += n
	}
	return b
}

// deposit records a request at now.
func (t *tokenBucket) deposit(now time.Time) {
	t.advance(now)
	t.net[t.cur%budgetSlices] += depositTokens
}

// withdraw takes a retry's cost at now, when the balance covers it.
func (t *tokenBucket) withdraw(now time.Time) bool {
	t.advance(now)
	if t.balance() < t.cost {
		return false
	}
	t.net[t.cur%budgetSlices] -= t.cost
	return true
}

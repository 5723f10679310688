package strategies

import (
	"math"
	"time"
)

// retryLayer is the retry wrapper in a strategy's chain: it passes picks
// through and holds the retry policy's state (its budgets and counters),
// which the caller consults through Policy.
type retryLayer struct {
	passThrough
	cfg    RetryConfig
	env    *buildEnv
	bucket *tokenBucket // nil without a budget
	active int          // retries in flight (concurrency budget)
	// exhausted: a budget refused the latest retry asked for.
	exhausted bool
}

func newRetryLayer(inner Picker, cfg RetryConfig, env *buildEnv) *retryLayer {
	l := &retryLayer{passThrough: passThrough{inner}, cfg: cfg, env: env}
	if cfg.Budget > 0 {
		l.bucket = newTokenBucket(cfg.BudgetWindow, cfg.Budget, cfg.MinPerS)
	}
	return l
}

// passThrough is the Picker of a wrapper that only holds a policy's state
// (retry, hedge): it picks what its inner Picker picks, and passes host
// changes on to it.
type passThrough struct{ inner Picker }

func (p passThrough) Pick(req Request, hosts []int) (int, func(Outcome)) {
	return p.inner.Pick(req, hosts)
}

// UpdateHosts keeps the inner Picker's host feed working through the layer.
func (p passThrough) UpdateHosts(hosts []int) {
	if u, ok := p.inner.(HostsUpdater); ok {
		u.UpdateHosts(hosts)
	}
}

// Policy is a strategy's client policy: whether, when and where a request
// makes more than one attempt (the retry and hedge wrappers). Whoever runs
// the strategy (the real engine's client, the simulator) carries the
// attempts out; each attempt is a pick of the Balancer and its outcome is
// reported as any pick's, so every wrapper sees every attempt. Policy's
// methods are safe for concurrent use, under the Balancer's lock.
type Policy struct {
	b     *Balancer
	retry *retryLayer // nil: no retries
	hedge *hedgeLayer // nil: no hedging

	stats PolicyStats
}

// PolicyStats counts what a Policy decided.
type PolicyStats struct {
	Retries        int64 // retries allowed
	RetriesRefused int64 // retries a budget refused
	Hedges         int64 // hedged attempts sent
	HedgesWon      int64 // requests answered by a hedged attempt
}

// Policy returns the Balancer's client policy; nil when its spec has no
// retry or hedge wrapper (every request is one attempt). A nil Policy's
// queries answer as such a policy would: no retry, no hedge.
func (b *Balancer) Policy() *Policy { return b.policy }

// Retries reports whether the policy retries at all.
func (p *Policy) Retries() bool { return p != nil && p.retry != nil && p.retry.cfg.Attempts > 1 }

// Hedges reports whether the policy hedges.
func (p *Policy) Hedges() bool { return p != nil && p.hedge != nil }

// PerTryTimeout is how long one attempt may take before it ends as a
// timeout (and may be retried); 0: only the request's own deadline.
func (p *Policy) PerTryTimeout() time.Duration {
	if p == nil || p.retry == nil {
		return 0
	}
	return p.retry.cfg.PerTryTimeout
}

// OtherHost reports whether a retry must avoid the hosts already tried
// (a hedge always does): the caller lists them in Request.Exclude.
func (p *Policy) OtherHost() bool { return p != nil && p.retry != nil && p.retry.cfg.OtherHost }

// MaxHedged is the most attempts of one request in flight at once (1
// without hedging).
func (p *Policy) MaxHedged() int {
	if p == nil || p.hedge == nil {
		return 1
	}
	return p.hedge.cfg.Max
}

// Start records the start of a request (a deposit into a retry budget).
func (p *Policy) Start() {
	if p == nil || p.retry == nil || p.retry.bucket == nil {
		return
	}
	p.b.lock()
	defer p.b.unlock()
	p.retry.bucket.deposit(p.b.clock.Now())
}

// Retry decides whether a request whose latest attempt ended with o (a
// failure; no attempt of it in flight) is retried, after retries retries
// already made. When it is, wait is the backoff to wait first and the
// retry holds a place in the concurrency budget until RetryEnded.
func (p *Policy) Retry(o Outcome, retries int, req Request) (wait time.Duration, ok bool) {
	if p == nil {
		return 0, false
	}
	l := p.retry
	if l == nil || !o.Failed() || retries+1 >= l.cfg.Attempts || (req.NonIdempotent && l.cfg.IdempotentOnly) || !l.cfg.retries(o) {
		return 0, false
	}
	p.b.lock()
	defer p.b.unlock()
	now := p.b.clock.Now()
	allowed := true
	if l.cfg.ConcurrencyBudget > 0 {
		var inflight int64
		for _, n := range p.b.inflight {
			inflight += n
		}
		// floor(share × attempts), the tolerance against the rounding of
		// share (0.29 × 100 is 28.999...).
		limit := max(int(math.Floor(l.cfg.ConcurrencyBudget*float64(inflight)+1e-9)), l.cfg.MinConcurrency)
		allowed = l.active < limit
	}
	if allowed && l.bucket != nil {
		allowed = l.bucket.withdraw(now)
	}
	if !allowed {
		p.stats.RetriesRefused++
		if !l.exhausted {
			l.exhausted = true
			p.b.events(Event{Time: now, Endpoint: NoHost, Kind: EventBudget, Detail: budgetExhaustedDetail})
		}
		return 0, false
	}
	if l.exhausted {
		l.exhausted = false
		p.b.events(Event{Time: now, Endpoint: NoHost, Kind: EventBudget, Detail: budgetAvailableDetail})
	}
	l.active++
	p.stats.Retries++
	return l.cfg.backoff(retries+1, l.env.rand.Float64()), true
}

// RetryEnded releases the place a retry allowed by Retry held in the
// concurrency budget: call it once that retry's attempt has ended (or was
// never sent).
func (p *Policy) RetryEnded() {
	p.b.lock()
	defer p.b.unlock()
	p.retry.active--
}

// HedgeDelay is how long a request waits for an answer before its next
// hedged attempt; ok is false when there is no hedging now (none, or a
// percentile delay still warming up).
func (p *Policy) HedgeDelay() (time.Duration, bool) {
	if p == nil || p.hedge == nil {
		return 0, false
	}
	p.b.lock()
	defer p.b.unlock()
	return p.hedge.hedgeDelay()
}

// Hedged records a hedged attempt sent; HedgeWon a request answered by
// one.
func (p *Policy) Hedged() {
	p.b.lock()
	p.stats.Hedges++
	p.b.unlock()
}

func (p *Policy) HedgeWon() {
	p.b.lock()
	p.stats.HedgesWon++
	p.b.unlock()
}

// Observe records the outcome of an attempt, for a hedge's percentile
// delay. The attempt's own pick is ended as usual (done, End or Finish).
func (p *Policy) Observe(o Outcome) {
	if p == nil || p.hedge == nil || p.hedge.cfg.Quantile == 0 {
		return
	}
	p.b.lock()
	defer p.b.unlock()
	p.hedge.observe(o)
}

// Stats returns the counters so far.
func (p *Policy) Stats() PolicyStats {
	p.b.lock()
	defer p.b.unlock()
	return p.stats
}

// lock takes the Balancer's lock unless it is used from one goroutine.
func (b *Balancer) lock() {
	if !b.serial {
		b.mu.Lock()
	}
}

func (b *Balancer) unlock() {
	if !b.serial {
		b.mu.Unlock()
	}
}

// excluder sits right around the base strategy of a spec with a retry or
// hedge wrapper: it removes the hosts a request excludes (Request.Exclude,
// the hosts a retry or a hedge must avoid) from the hosts the wrappers
// allow, unless none would remain, so that ejection, slow start and the
// other wrappers see an avoided host as one pick's choice, not as a change
// of their host set. The base strategy hears of the narrowed set through
// the excluder's own hostFeed: a strategy that derives state from its hosts
// (a ring, a table) rebuilds it for the excluding pick and again for the
// next one.
type excluder struct {
	inner Picker
	feed  hostFeed
	buf   []int // the latest excluding pick's hosts
}

func newExcluder(inner Picker) *excluder { return &excluder{inner: inner, feed: newHostFeed(inner)} }

// UpdateHosts notes a change of the hosts the wrappers allow.
func (e *excluder) UpdateHosts([]int) { e.feed.changed() }

func (e *excluder) Pick(req Request, hosts []int) (int, func(Outcome)) {
	if len(req.Exclude) > 0 {
		if narrowed := excluding(e.buf, hosts, req.Exclude); len(narrowed) < len(hosts) {
			e.buf = narrowed
			e.feed.changed()
			e.feed.sync(narrowed)
			ep, done := e.inner.Pick(req, narrowed)
			e.feed.changed() // the next pick's hosts differ again
			return ep, done
		}
	}
	e.feed.sync(hosts)
	return e.inner.Pick(req, hosts)
}

// excluding returns hosts without those of exclude, in dst; hosts itself
// when none would remain.
func excluding(dst, hosts, exclude []int) []int {
	dst = dst[:0]
	for _, h := range hosts {
		skip := false
		for _, x := range exclude {
			if h == x {
				skip = true
				break
			}
		}
		if !skip {
			dst = append(dst, h)
		}
	}
	if len(dst) == 0 {
		return hosts
	}
	return dst
}

// hasPolicy reports whether the spec has a retry or hedge wrapper.
func (s Spec) hasPolicy() bool {
	for _, w := range s.Wrappers {
		if w.Name == "retry" || w.Name == "hedge" {
			return true
		}
	}
	return false
}

// PolicyConfig returns the retry and hedge wrappers' configurations of a
// parsed spec; nil for a wrapper it does not have.
func (s Spec) PolicyConfig() (retry *RetryConfig, hedge *HedgeConfig) {
	for _, w := range s.Wrappers {
		switch w.Name {
		case "retry":
			if cfg, err := parseRetryConfig(w.Params); err == nil {
				retry = &cfg
			}
		case "hedge":
			if cfg, err := parseHedgeConfig(w.Params); err == nil {
				hedge = &cfg
			}
		}
	}
	return retry, hedge
}

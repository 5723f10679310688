package engine

import (
	"fmt"
	"time"

	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// Attempt is one attempt of a request under a retry or hedge policy: a
// pick of the strategy, sent to its instance. A request's attempts are
// recorded at their instances (Collector.AddAttempt); the request itself
// (Collector.Add) counts once, with its final outcome.
type Attempt struct {
	Instance int           // the instance it went to
	SentAt   time.Duration // when the attempt was sent, since the start of the attack
	Latency  time.Duration // from its send to its end
	Success  bool          // a 2xx answer
	Timeout  bool          // it ended by a timeout: its own per-try timeout or the request's deadline
	// Cancelled: the client gave the attempt up because the request no
	// longer needed it (another attempt answered first). It counts as sent
	// to its instance, not as a failure of it, and adds no latency.
	Cancelled bool
}

// flow counts a strategy's traffic as the client offers it and as the
// instances receive it: per second (by the client request's send time)
// the client requests (offered), the attempts they made (attempts) and the
// requests answered 2xx within their deadline (goodput); the attempts per
// request; and per instance the attempts cancelled.
type flow struct {
	// perAttempt: the strategy has a retry or hedge policy, and each
	// request's attempts are recorded at their instances by AddAttempt;
	// Add then records the request alone.
	perAttempt                 bool
	offered, attempts, goodput []int64 // per bucket
	// perRequest[k] counts the requests that made k attempts.
	perRequest []int64
	cancelled  []int64 // per instance
	total      int64   // attempts sent, in all
}

func newFlow(buckets, instances int) flow {
	return flow{
		offered:    make([]int64, buckets),
		attempts:   make([]int64, buckets),
		goodput:    make([]int64, buckets),
		perRequest: make([]int64, 2),
		cancelled:  make([]int64, instances),
	}
}

// request counts n requests of outcome o sent in bucket b.
func (f *flow) request(b int, o Outcome, n int64) {
	f.offered[b] += n
	if o.Success {
		f.goodput[b] += n
	}
	k := int(o.Attempts)
	if !f.perAttempt {
		k = 0
		if o.Instance >= 0 {
			k = 1
		}
	} else {
		// A request's attempts count in the second it was sent: attempts
		// over offered is that second's amplification, and retries after
		// the end of the attack do not pile into its last second.
		f.attempts[b] += int64(o.Attempts) * n
	}
	for k >= len(f.perRequest) {
		f.perRequest = append(f.perRequest, 0)
	}
	f.perRequest[k] += n
}

// attempt counts n attempts sent in bucket b: under a policy they are
// counted per second with their requests (request), here only in all.
func (f *flow) attempt(b int, n int64) {
	if !f.perAttempt {
		f.attempts[b] += n
	}
	f.total += n
}

// CountAttempts makes the collector record instances' traffic from the
// attempts (AddAttempt) rather than from the requests (Add), for a
// strategy with a retry or hedge policy. Call it before the first Add.
func (c *Collector) CountAttempts() {
	c.mu.Lock()
	c.flow.perAttempt = true
	c.mu.Unlock()
}

// AddAttempt records one attempt of a request at its instance; the
// request's own outcome goes to Add, with its number of attempts.
func (c *Collector) AddAttempt(a Attempt) {
	if a.Instance < 0 || a.Instance >= c.instances {
		return
	}
	us := micros(a.Latency)
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bucketOf(a.SentAt)
	c.flow.attempt(b, 1)
	if a.Cancelled {
		c.inst[a.Instance].requests++
		c.flow.cancelled[a.Instance]++
		c.series[a.Instance].Requests[b]++
		return
	}
	c.addInstance(a.Instance, b, us, a.Success, a.Timeout, a.Timeout || a.Latency > c.slow, 1)
}

// fillFlow adds the flow to s, the strategy's summary. c.mu held.
func (c *Collector) fillFlow(s *reports.Strategy) {
	f := &c.flow
	s.Timeline.Offered, s.Timeline.Attempts, s.Timeline.Goodput = f.offered, f.attempts, f.goodput
	st := AttemptStatsOf(f.perRequest)
	if st == nil {
		return
	}
	s.AttemptsPerRequest = st
	for i := range s.Instances {
		n := s.Instances[i].Requests
		s.Instances[i].Attempts = &n
		if f.cancelled[i] > 0 {
			s.Instances[i].Cancelled = f.cancelled[i]
		}
	}
}

// AttemptStatsOf is the distribution of attempts per request where
// counts[k] requests made k attempts; nil without requests.
func AttemptStatsOf(counts []int64) *reports.AttemptStats {
	var reqs, sum int64
	for k, n := range counts {
		reqs += n
		sum += int64(k) * n
	}
	if reqs == 0 {
		return nil
	}
	st := &reports.AttemptStats{Mean: float64(sum) / float64(reqs)}
	var seen int64
	for k, n := range counts {
		if n == 0 {
			continue
		}
		st.Max = k
		if seen += n; st.P99 == 0 && float64(seen) >= 0.99*float64(reqs) {
			st.P99 = k
		}
	}
	return st
}

// attemptsTotal is what instances' shares divide: every attempt under a
// policy, every request otherwise. c.mu held.
func (c *Collector) attemptsTotal() int64 {
	if c.flow.perAttempt {
		return c.flow.total
	}
	return c.requests
}

// HasPolicy reports whether the balancers have a retry or hedge policy,
// whose requests are counted as attempts (Collector.CountAttempts).
func HasPolicy(lbs []*strategies.Balancer) bool {
	return len(lbs) > 0 && lbs[0].Policy() != nil
}

// merge adds a generator's flow to f; nil (an older generator) adds
// nothing.
func (f *flow) merge(t *streamFlow) error {
	if t == nil {
		return nil
	}
	if len(t.Offered) != len(f.offered) || len(t.Attempts) != len(f.offered) || len(t.Goodput) != len(f.offered) {
		return fmt.Errorf("flow: %d seconds, want %d", len(t.Offered), len(f.offered))
	}
	if len(t.Cancelled) != len(f.cancelled) {
		return fmt.Errorf("flow: %d instances, want %d", len(t.Cancelled), len(f.cancelled))
	}
	f.perAttempt = f.perAttempt || t.PerAttempt
	for b := range f.offered {
		f.offered[b] += t.Offered[b]
		f.attempts[b] += t.Attempts[b]
		f.goodput[b] += t.Goodput[b]
	}
	for k, n := range t.PerRequest {
		for k >= len(f.perRequest) {
			f.perRequest = append(f.perRequest, 0)
		}
		f.perRequest[k] += n
	}
	for i, n := range t.Cancelled {
		f.cancelled[i] += n
	}
	f.total += t.Total
	return nil
}

// addRetryStats returns the sum of a and b, either of which may be nil.
func addRetryStats(a, b *reports.RetryStats) *reports.RetryStats {
	if b == nil {
		return a
	}
	if a == nil {
		a = &reports.RetryStats{}
	}
	a.Retries += b.Retries
	a.RetriesRefused += b.RetriesRefused
	a.Hedges += b.Hedges
	a.HedgesWon += b.HedgesWon
	return a
}

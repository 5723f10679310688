package engine

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// AbortSlices is how many slices an abort condition's window is cut
// into: the window slides by a slice, and a condition is judged at every
// slice's end once a whole window has passed.
const AbortSlices = 20

// minAbortSlice bounds a slice from below, so that a short window is not
// judged more often than every 10 ms.
const minAbortSlice = 10 * time.Millisecond

// abortSlack is how many slices beyond a window the ring keeps, for
// results that reach the watch after the slice they ended in was judged.
const abortSlack = 4

// AbortWatch judges an experiment's abort conditions (Experiment.Abort)
// over a sliding window of one strategy's results, by the time each
// ended (sent plus latency) since the start of the attack. Both engines
// feed it every outcome the collector gets and ask it at the times Due
// says (the simulator) or every Every (the real engine, on its clock):
// so one rule, in real or virtual time. Not safe for concurrent use.
type AbortWatch struct {
	strategy string
	slow     time.Duration
	conds    []*abortCond
}

// abortCond is one condition with its ring of slices.
type abortCond struct {
	cond  experiments.Abort
	width time.Duration // of a slice
	n     int64         // slices per window
	ring  []abortSlice
	// judged is how many whole slices had passed at the last judgement.
	judged  int64
	latency bool                    // the metric needs the latencies
	scratch *hdrhistogram.Histogram // the window's latencies, when latency
}

// abortSlice counts the results that ended within one slice.
type abortSlice struct {
	idx                              int64 // which slice; -1: none yet
	requests, errors, timeouts, slow int64
	sumUs                            float64
	hist                             instHist // when the metric needs the latencies
}

// NewAbortWatch returns the watch of exp's abort conditions for strategy
// name's attack, or nil when exp has none.
func NewAbortWatch(exp *experiments.Experiment, name string) *AbortWatch {
	if len(exp.Abort) == 0 {
		return nil
	}
	w := &AbortWatch{strategy: name, slow: exp.SlowThreshold}
	for _, a := range exp.Abort {
		width := max(a.Window/AbortSlices, minAbortSlice)
		c := &abortCond{
			cond:    a,
			width:   width,
			n:       max(1, int64((a.Window+width-1)/width)),
			latency: a.Metric != "mean_ms" && isLatency(a.Metric),
		}
		c.ring = make([]abortSlice, c.n+abortSlack)
		for i := range c.ring {
			c.ring[i].idx = -1
		}
		if c.latency {
			c.scratch = newHist()
		}
		w.conds = append(w.conds, c)
	}
	return w
}

// isLatency reports whether metric is a latency.
func isLatency(metric string) bool {
	m, _ := reports.LookupMetric(metric)
	return m.Kind == reports.KindMilliseconds
}

// mergeInto adds h's counts to the dense histogram to.
func (h *instHist) mergeInto(to *hdrhistogram.Histogram) {
	if h.dense != nil {
		to.Merge(h.dense)
		return
	}
	h.packed.MergeInto(to)
}

// Every is how often a real engine asks (Judge): the thinnest slice.
func (w *AbortWatch) Every() time.Duration {
	every := time.Duration(math.MaxInt64)
	for _, c := range w.conds {
		every = min(every, c.width)
	}
	return every
}

// Due returns the next time since the start of the attack at which a
// condition is to be judged: the end of its first whole window, then
// the end of every slice.
func (w *AbortWatch) Due() time.Duration {
	due := time.Duration(math.MaxInt64)
	for _, c := range w.conds {
		k := max(c.judged+1, c.n)
		due = min(due, time.Duration(k)*c.width)
	}
	return due
}

// Add counts one outcome in the slice it ended in. A result that ends in
// a slice no window can judge any more is dropped.
func (w *AbortWatch) Add(o Outcome) {
	end := o.SentAt + o.Latency
	slow := o.Timeout || o.Latency > w.slow
	for _, c := range w.conds {
		i := int64(end / c.width)
		s := &c.ring[i%int64(len(c.ring))]
		if s.idx > i {
			continue
		}
		if s.idx != i {
			*s = abortSlice{idx: i}
			if c.latency {
				s.hist = newInstHist()
			}
		}
		s.requests++
		if !o.Success {
			s.errors++
		}
		if o.Timeout {
			s.timeouts++
		}
		if slow {
			s.slow++
		}
		s.sumUs += float64(o.Latency) / float64(time.Microsecond)
		if c.latency {
			s.hist.record(micros(o.Latency), 1)
		}
	}
}

// Judge judges, at elapsed since the start of the attack, each condition
// whose window has passed whole and that has a slice more to judge than
// last time, over the results that ended in its last window of whole
// slices. It returns the first condition that trips, nil when none does;
// an empty window trips none.
func (w *AbortWatch) Judge(elapsed time.Duration) *reports.Abort {
	for _, c := range w.conds {
		k := int64(elapsed / c.width)
		if k < c.n || k <= c.judged {
			continue
		}
		c.judged = k
		v, requests := c.value(k)
		if requests == 0 || !c.cond.Holds(v) {
			continue
		}
		return &reports.Abort{
			Metric: c.cond.Metric, Op: c.cond.Op, Threshold: c.cond.Value,
			WindowS: c.cond.Window.Seconds(), Value: v, Requests: requests,
			Strategy: w.strategy, AtS: elapsed.Seconds(),
		}
	}
	return nil
}

// value is c's metric over slices [k-n, k), and how many results they
// hold.
func (c *abortCond) value(k int64) (float64, int64) {
	var t abortSlice
	if c.latency {
		c.scratch.Reset()
	}
	for i := range c.ring {
		s := &c.ring[i]
		if s.idx < k-c.n || s.idx >= k {
			continue
		}
		t.requests += s.requests
		t.errors += s.errors
		t.timeouts += s.timeouts
		t.slow += s.slow
		t.sumUs += s.sumUs
		if c.latency {
			s.hist.mergeInto(c.scratch)
		}
	}
	if t.requests == 0 {
		return math.NaN(), 0
	}
	r := func(n int64) float64 { return float64(n) / float64(t.requests) }
	switch c.cond.Metric {
	case "error_ratio":
		return r(t.errors), t.requests
	case "success_ratio":
		return 1 - r(t.errors), t.requests
	case "timeout_ratio":
		return r(t.timeouts), t.requests
	case "slow_ratio":
		return r(t.slow), t.requests
	case "bad_ratio": // as reports' bad_ratio: error + slow - timeout, within its bounds
		e, s := r(t.errors), r(t.slow)
		return math.Max(math.Max(e, s), math.Min(1, e+s-r(t.timeouts))), t.requests
	case "mean_ms":
		return t.sumUs / float64(t.requests) / 1000, t.requests
	case "p50_ms":
		return ms(c.scratch.ValueAtPercentile(50)), t.requests
	case "p90_ms":
		return ms(c.scratch.ValueAtPercentile(90)), t.requests
	case "p99_ms":
		return ms(c.scratch.ValueAtPercentile(99)), t.requests
	case "p999_ms":
		return ms(c.scratch.ValueAtPercentile(99.9)), t.requests
	case "max_ms":
		return ms(c.scratch.Max()), t.requests
	}
	return math.NaN(), t.requests // refused by the loader
}

package strategies

import (
	"slices"
	"time"
)

// The observation of the health wrapper: per endpoint a sliding window of
// healthBuckets buckets, its running sums, and the level a window shows.

// healthBuckets is the number of buckets of a host's sliding window.
const healthBuckets = 10

// healthBucket counts one endpoint's outcomes in bucket idx, one of the
// healthBuckets buckets of width window/healthBuckets that its window spans.
type healthBucket struct {
	idx     int64 // bucket number since start
	reqs    int64
	fails   int64
	latency time.Duration
}

// healthWindow holds the sums of one endpoint's buckets in the window that
// ends in bucket head; buckets that left it are zero.
type healthWindow struct {
	head    int64
	reqs    int64
	fails   int64
	latency time.Duration
}

// bucketIdx returns the number of the bucket that now falls in.
func (h *health) bucketIdx(now time.Time) int64 {
	d := now.Sub(h.start)
	if d < 0 {
		return 0
	}
	return int64(d / h.width)
}

// window brings ep's sums up to bucket i, unless they are already past it,
// and returns them: its requests, failures and latency sum over the window
// ending in bucket i.
func (h *health) window(ep int, i int64) (reqs, fails int64, latency time.Duration) {
	w := &h.windows[ep]
	if i > w.head {
		// The buckets in (head-healthBuckets, min(head, i-healthBuckets)]
		// leave the window.
		buckets := h.buckets[ep*healthBuckets : (ep+1)*healthBuckets]
		for j := w.head - healthBuckets + 1; j <= w.head && j <= i-healthBuckets; j++ {
			if b := &buckets[bucketSlot(j)]; b.idx == j {
				w.reqs -= b.reqs
				w.fails -= b.fails
				w.latency -= b.latency
				*b = healthBucket{}
			}
		}
		w.head = i
	}
	return w.reqs, w.fails, w.latency
}

// bucketSlot returns the index of bucket j among its endpoint's buckets.
func bucketSlot(j int64) int {
	return int((j%healthBuckets + healthBuckets) % healthBuckets)
}

// judge returns the level ep's window shows at now, or noJudgement.
func (h *health) judge(ep int, now time.Time) healthLevel {
	i := h.bucketIdx(now)
	reqs, fails, latency := h.window(ep, i)
	if reqs < int64(h.cfg.minRequests) {
		return noJudgement
	}
	l := levelHealthy
	ratio := float64(fails) / float64(reqs)
	for lv := levelUnhealthy; lv > levelHealthy; lv-- {
		if ratio >= h.cfg.errors[lv] {
			l = lv
			break
		}
	}
	if i != h.medianIdx {
		h.refreshMedian(i)
	}
	if h.median > 0 {
		r := float64(latency) / float64(reqs) / h.median
		for lv := levelUnhealthy; lv > l; lv-- {
			if r >= h.cfg.latency[lv] {
				l = lv
				break
			}
		}
	}
	return l
}

// refreshMedian computes the lower median of the mean latencies of the
// endpoints with min_requests in their window ending in bucket i.
func (h *health) refreshMedian(i int64) {
	h.scratch = h.scratch[:0]
	for ep := range h.hosts {
		if reqs, _, latency := h.window(ep, i); reqs >= int64(h.cfg.minRequests) {
			h.scratch = append(h.scratch, float64(latency)/float64(reqs))
		}
	}
	h.median = 0
	if len(h.scratch) > 0 {
		slices.Sort(h.scratch)
		h.median = h.scratch[(len(h.scratch)-1)/2]
	}
	h.medianIdx = i
}

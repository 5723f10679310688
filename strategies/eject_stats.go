package strategies

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// The statistical detectors of the eject wrapper: Envoy's success-rate and
// failure-percentage outlier detection, run once per interval over the
// outcomes counted in the interval that ended (see ejector).

// ejectTolerance absorbs rounding error in the comparisons with a
// threshold, so that hosts with equal rates are never outliers and a rate
// equal to the threshold in exact arithmetic counts as equal.
const ejectTolerance = 1e-12

// detect runs the enforced statistical detectors over every bucket of
// counts, ejecting at now. As in Envoy, success rate runs before failure
// percentage, and the external-origin bucket before the local-origin one.
func (e *ejector) detect(now time.Time) {
	for b := range e.buckets {
		if e.cfg.successRate {
			reason := ejectReasonSuccessRate
			if b == 1 {
				reason = ejectReasonSuccessRateLocal
			}
			e.detectSuccessRate(b, now, reason)
		}
		if e.cfg.failurePct {
			reason := ejectReasonFailurePct
			if b == 1 {
				reason = ejectReasonFailurePctLocal
			}
			e.detectFailurePercentage(b, now, reason)
		}
	}
}

// candidates puts in e.scratch the non-ejected endpoints with at least
// volume outcomes in bucket b, and their success rates in e.rates.
func (e *ejector) candidates(b, volume int) {
	ids, rates := e.scratch[:0], e.rates[:0]
	for ep := range e.state {
		h := &e.state[ep]
		c := h.counts[b]
		if h.ejected || c.total < int64(volume) || c.total == 0 {
			continue
		}
		ids = append(ids, ep)
		rates = append(rates, float64(c.total-c.failed)/float64(c.total))
	}
	e.scratch, e.rates = ids, rates
}

// detectSuccessRate ejects the endpoints whose success rate in bucket b is
// below mean − srFactor·stdev over the endpoints with enough volume, when
// there are enough of them.
func (e *ejector) detectSuccessRate(b int, now time.Time, reason string) {
	e.candidates(b, e.cfg.srVolume)
	if len(e.scratch) == 0 || len(e.scratch) < e.cfg.srMinHosts {
		return
	}
	_, threshold := successRateThreshold(e.rates, e.cfg.srFactor)
	e.ejectOutliers(now, reason, func(rate float64) bool { return rate < threshold-ejectTolerance })
}

// detectFailurePercentage ejects the endpoints whose failure ratio in
// bucket b is at least fpThreshold, among those with enough volume, when
// there are enough of them.
func (e *ejector) detectFailurePercentage(b int, now time.Time, reason string) {
	e.candidates(b, e.cfg.fpVolume)
	if len(e.scratch) == 0 || len(e.scratch) < e.cfg.fpMinHosts {
		return
	}
	threshold := e.cfg.fpThreshold
	e.ejectOutliers(now, reason, func(rate float64) bool { return 1-rate >= threshold-ejectTolerance })
}

// ejectOutliers ejects the candidates whose rate is an outlier, lowest
// success rate first (then lowest id), so that the cap keeps the worst out.
func (e *ejector) ejectOutliers(now time.Time, reason string, outlier func(rate float64) bool) {
	type cand struct {
		ep   int
		rate float64
	}
	var out []cand
	for i, ep := range e.scratch {
		if outlier(e.rates[i]) {
			out = append(out, cand{ep, e.rates[i]})
		}
	}
	slices.SortFunc(out, func(a, b cand) int {
		if c := cmp.Compare(a.rate, b.rate); c != 0 {
			return c
		}
		return cmp.Compare(a.ep, b.ep)
	})
	for _, c := range out {
		e.eject(c.ep, now, reason)
	}
}

// successRateThreshold returns the mean of rates and Envoy's success-rate
// ejection threshold mean − factor·stdev, stdev being the population
// standard deviation. rates must not be empty.
func successRateThreshold(rates []float64, factor float64) (mean, threshold float64) {
	var sum float64
	for _, r := range rates {
		sum += r
	}
	mean = sum / float64(len(rates))
	var variance float64
	for _, r := range rates {
		variance += (r - mean) * (r - mean)
	}
	variance /= float64(len(rates))
	return mean, mean - factor*math.Sqrt(variance)
}

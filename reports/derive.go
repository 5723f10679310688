package reports

import (
	"math"
	"slices"
)

// errorTailThreshold is the error ratio of a second above which errors are
// still going on, for ErrorTailS.
const errorTailThreshold = 0.01

// Derive fills in every strategy's scenario metrics (MaxAvgLoad,
// MaxJumpRps, ShareStddev, ErrorTailS and each instance's ShareStddev)
// from its instances and timeline, and the summary's fault windows. It is
// idempotent; a strategy without a timeline gets only MaxAvgLoad.
func Derive(sum *Summary) {
	faultEnd := -1.0 // end of the last fault that ends before the run does
	for _, f := range sum.Faults {
		if f.EndS < sum.DurationS && f.EndS > faultEnd {
			faultEnd = f.EndS
		}
	}
	for i := range sum.Strategies {
		deriveStrategy(&sum.Strategies[i], faultEnd)
	}
}

func deriveStrategy(st *Strategy, faultEnd float64) {
	st.MaxAvgLoad = maxAvg(edgeInstances(st))
	st.MaxJumpRps, st.ShareStddev, st.ErrorTailS = 0, 0, nil
	tl := st.Timeline
	if tl == nil || len(tl.Instances) == 0 || tl.BucketS <= 0 {
		return
	}
	if len(st.Tiers) > 0 {
		// The timeline is the client's: its first tier's instances.
		edge := *tl
		edge.Instances = slices.DeleteFunc(slices.Clone(tl.Instances), func(s InstanceSeries) bool { return !slices.Contains(st.Tiers[0].Instances, s.ID) })
		tl = &edge
	}
	buckets := len(tl.Instances[0].Requests)
	if st.ElapsedS > 0 {
		// Buckets past the attack hold nothing sent; leave them out.
		buckets = min(buckets, int(math.Ceil(st.ElapsedS/tl.BucketS-1e-9)))
	}
	totals := make([]int64, buckets)
	errs := make([]int64, buckets)
	for _, s := range tl.Instances {
		for t := range buckets {
			if t < len(s.Requests) {
				totals[t] += s.Requests[t]
			}
			if t < len(s.Errors) {
				errs[t] += s.Errors[t]
			}
		}
	}
	for t := range min(buckets, len(tl.Unrouted)) {
		totals[t] += tl.Unrouted[t]
		errs[t] += tl.Unrouted[t]
	}
	byID := map[int]int{}
	for i, in := range st.Instances {
		byID[in.ID] = i
	}
	var sumSD float64
	for _, s := range tl.Instances {
		for t := 1; t < buckets && t < len(s.Requests); t++ {
			jump := math.Abs(float64(s.Requests[t]-s.Requests[t-1])) / tl.BucketS
			st.MaxJumpRps = math.Max(st.MaxJumpRps, jump)
		}
		var shares []float64
		for t := range buckets {
			if totals[t] > 0 && t < len(s.Requests) {
				shares = append(shares, float64(s.Requests[t])/float64(totals[t]))
			}
		}
		sd := stddev(shares)
		sumSD += sd
		if i, ok := byID[s.ID]; ok {
			st.Instances[i].ShareStddev = sd
		}
	}
	st.ShareStddev = sumSD / float64(len(tl.Instances))
	if faultEnd >= 0 {
		tail := 0.0
		for t := buckets - 1; t >= 0; t-- {
			if totals[t] > 0 && float64(errs[t]) > errorTailThreshold*float64(totals[t]) {
				tail = math.Max(0, float64(t+1)*tl.BucketS-faultEnd)
				break
			}
		}
		st.ErrorTailS = &tail
	}
}

// maxAvg is the largest instance's requests over the mean per instance;
// 0 without requests.
func maxAvg(ins []Instance) float64 {
	var most, total int64
	for _, in := range ins {
		most = max(most, in.Requests)
		total += in.Requests
	}
	if total == 0 {
		return 0
	}
	return float64(most) * float64(len(ins)) / float64(total)
}

// stddev is the population standard deviation of xs; 0 for fewer than two.
func stddev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)))
}

// edgeInstances are the instances the client balances over: a tiered
// strategy's first tier, else all.
func edgeInstances(st *Strategy) []Instance {
	if len(st.Tiers) == 0 {
		return st.Instances
	}
	return slices.DeleteFunc(slices.Clone(st.Instances), func(in Instance) bool { return !slices.Contains(st.Tiers[0].Instances, in.ID) })
}

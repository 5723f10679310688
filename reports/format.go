package reports

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// fmtMs formats a latency in milliseconds with precision that suits its
// magnitude.
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case v == 0:
		return "0"
	case math.Abs(v) < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case math.Abs(v) < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// fmtPct formats a ratio as a percentage with two decimals; non-zero values
// too small to show are written "<0.01" so they are not mistaken for zero.
func fmtPct(ratio float64) string {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return "n/a"
	}
	v := ratio * 100
	if v > 0 && v < 0.005 {
		return "<0.01"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fmtNum formats a rate or duration without needless decimals.
func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// fmtIDs formats instance ids as "0, 3".
func fmtIDs(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ", ")
}

// fmtWorkers describes a workers-per-instance setting.
func fmtWorkers(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}

// fmtFault describes one fault window in a line.
func fmtFault(f FaultWindow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %d: %s", f.Instance, f.Mode)
	if f.Detail != "" {
		fmt.Fprintf(&b, " (%s)", f.Detail)
	}
	fmt.Fprintf(&b, ", %s–%s s", fmtNum(f.StartS), fmtNum(f.EndS))
	return b.String()
}

// instanceCount is the number of instances of the run: Summary.Instances
// when set, else the largest count reported by any strategy.
func instanceCount(s *Summary) int {
	n := s.Instances
	for _, st := range s.Strategies {
		n = max(n, len(st.Instances))
	}
	return n
}

// fairFaultyShare is the share the faulty instances would get under an even
// split, or NaN when it is unknown.
func fairFaultyShare(s *Summary) float64 {
	n := instanceCount(s)
	if n == 0 || len(s.FaultyInstances) == 0 {
		return math.NaN()
	}
	if edge := edgeIDs(s); edge != nil {
		// Tiered: faulty_share is of the client's first tier.
		k := 0
		for _, id := range s.FaultyInstances {
			if slices.Contains(edge, id) {
				k++
			}
		}
		if k == 0 {
			return math.NaN()
		}
		return float64(k) / float64(len(edge))
	}
	return float64(len(s.FaultyInstances)) / float64(n)
}

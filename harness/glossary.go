package harness

import (
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// glossaryOf is a line for each base strategy, wrapper and proxy kind the
// measured strategies name, in the order they first name them.
func glossaryOf(sts []reports.Strategy) []reports.Term {
	var out []reports.Term
	seen := map[string]bool{}
	for _, st := range sts {
		for _, n := range strategies.Terms(st.Name) {
			if seen[n] {
				continue
			}
			seen[n] = true
			if text := strategies.Describe(n); text != "" {
				out = append(out, reports.Term{Name: n, Text: text})
			}
		}
	}
	return out
}

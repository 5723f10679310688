package experiments

import (
	"fmt"
	"slices"
)

// resize gives e n instances instead of the file's instances.count, as
// --backend given n times does: the instances beyond n go, with their
// own settings, and new ones take the file's defaults (workers, service
// time, weight 1). A fault on an instance beyond n is not applied, each
// with a warning naming it (a warm-up goes with its instance, silently).
// e is Apply's copy; the file's experiment is left as it is.
func (e *Experiment) resize(n int) {
	in := &e.Instances
	for id := n; id < len(in.Each); id++ {
		if at := in.Each[id].JoinAt; at > 0 {
			e.Warnings = append(e.Warnings, fmt.Sprintf("--backend: instance %d, which joins at %v, is not in the run: it has %d instances, one per --backend (ids 0..%d)", id, at, n, n-1))
		}
	}
	if len(in.Each) > 0 {
		each := slices.Clone(in.Each[:min(n, len(in.Each))])
		for len(each) < n {
			each = append(each, Instance{Workers: in.Workers, Service: in.Service, Weight: 1})
		}
		in.Each = each
	}
	in.Count = n
	var kept []Fault
	dropped := false
	for i, f := range e.Faults {
		switch {
		case f.Instance < n:
			kept = append(kept, f)
		case !f.Warmup:
			dropped = true
			_, entry := f.where(i)
			e.Warnings = append(e.Warnings, fmt.Sprintf("--backend: %s (%s on instance %d) is not applied: the run has %d instances, one per --backend (ids 0..%d)",
				entry, f.Spec.Mode(), f.Instance, n, n-1))
		}
	}
	if dropped && len(kept) == 0 {
		e.Warnings = append(e.Warnings, fmt.Sprintf("--backend: no fault of the experiment is applied; the run measures the %d instances without one", n))
	}
	e.Faults = kept
}

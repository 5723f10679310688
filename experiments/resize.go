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
	e.dropFaults("--backend", func(f Fault) bool { return f.Instance < n }, func(Fault) string {
		return fmt.Sprintf("the run has %d instances, one per --backend (ids 0..%d)", n, n-1)
	})
}

// dropFaults leaves out the faults keep refuses, each with a warning
// that the override (flag) left it out and why: a run that silently lost
// its fault answers another question. A warm-up goes with its instance,
// silently. When no fault is left, a warning says so.
func (e *Experiment) dropFaults(flag string, keep func(Fault) bool, why func(Fault) string) {
	var kept []Fault
	dropped := false
	for i, f := range e.Faults {
		switch {
		case keep(f):
			kept = append(kept, f)
		case !f.Warmup:
			dropped = true
			_, entry := f.where(i)
			e.Warnings = append(e.Warnings, fmt.Sprintf("%s: %s (%s on instance %d) is not applied: %s", flag, entry, f.Spec.Mode(), f.Instance, why(f)))
		}
	}
	if dropped && len(kept) == 0 {
		e.Warnings = append(e.Warnings, flag+": no fault of the experiment is applied; the run measures the instances without one")
	}
	e.Faults = kept
}

package reports

import "math"

// Unobserved reports whether st lacks the named metric because its run
// could not measure it at all (duplicate_executions in a simulation, or
// against instances that do not count what they execute), rather than
// because of what the strategy did: an expectation on it then neither
// passes nor fails.
func Unobserved(st *Strategy, name string) bool {
	m, ok := LookupMetric(name)
	return ok && m.unobservable && math.IsNaN(m.Value(st))
}

package live

import (
	"os"
	"runtime/debug"
)

// attackGCPercent is the garbage collector's target while an attack runs.
// The generator's live heap is small (the collector's histograms, the
// connections, the requests in flight) and its garbage per request steady,
// so at the default of 100 the collector runs many times a second and its
// assists delay the very requests being measured: under the baseline load
// (BenchmarkSidecarAtBaseline) 400 cut the p99 of both the direct and the
// sidecar path by about a millisecond. lbchaos proxy and lbchaos serve use
// the same.
const attackGCPercent = 400

// lessGC raises the collector's target for the duration of an attack and
// returns the function that restores it. A GOGC set in the environment is
// the user's choice and is left alone.
func lessGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(attackGCPercent)
	return func() { debug.SetGCPercent(prev) }
}

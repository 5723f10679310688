//go:build !unix

package live

import "time"

// processCPU is not measured where there is no getrusage.
func processCPU() (time.Duration, bool) { return 0, false }

//go:build !unix

package real

// RaiseFileLimit returns a conservative open-file budget where the platform
// has no setrlimit.
func RaiseFileLimit() uint64 { return 8192 }

//go:build !unix

package live

// RaiseFileLimit returns a conservative open-file budget where the platform
// has no setrlimit.
func RaiseFileLimit() uint64 { return 8192 }

//go:build unix

package live

import "syscall"

// fileLimitGoal is the open-file limit a run asks for: a slow instance with a
// 30 s timeout can hold tens of thousands of requests, each a connection.
const fileLimitGoal = 1 << 20

// RaiseFileLimit raises the process's open-file limit as far as it may
// (the hard limit, and the hard limit itself when running as root) and
// returns the soft limit now in force.
func RaiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Max < fileLimitGoal {
		want := syscall.Rlimit{Cur: fileLimitGoal, Max: fileLimitGoal}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			return fileLimitGoal
		}
	}
	if lim.Cur < lim.Max {
		want := syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			return lim.Max
		}
	}
	return lim.Cur
}

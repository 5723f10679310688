package fleet

import (
	"strings"
	"time"
)

// Crash is an instance failing on its own, not by a scheduled fault: its
// container exited, or its in-process server panicked.
type Crash struct {
	Instance int
	Time     time.Time
	// Fatal is true when the instance stopped serving (a container that
	// exited, a panic in a goroutine of an in-process server); false when
	// one request's handler panicked and the instance went on.
	Fatal bool
	// Detail says what happened: the exit code, the panic value.
	Detail string
	// Log returns the end of the instance's output (a container's last
	// lines) or the panic's stack, oldest line first. It may take a moment
	// (a container's output comes from its engine): a watcher reports the
	// crash as soon as it knows of it, and the receiver calls Log after it
	// has acted on the crash. Nil: there is none.
	Log func() []string
}

// Watcher is implemented by fleets that notice their instances failing on
// their own. Watch calls report, from a goroutine of its own, for every
// such failure from its return until stop returns; stop is idempotent and
// waits until report is no longer called. Failures caused by the
// harness — a scheduled kill, closing the fleet — are not reported.
type Watcher interface {
	Watch(report func(Crash)) (stop func(), err error)
}

// LogLines is how many lines of an instance's output a Crash keeps.
const LogLines = 20

// LastLines returns the last n non-empty lines of s, each trimmed of
// trailing space.
func LastLines(s string, n int) []string {
	var lines []string
	for l := range strings.Lines(s) {
		if l = strings.TrimRight(l, " \t\r\n"); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

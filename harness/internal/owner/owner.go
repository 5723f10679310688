// Package owner names the process that created something lbchaos leaves in
// a shared runtime (Docker containers, Kubernetes namespaces), so that a
// later run can tell the leftovers of a process that died from those of one
// that still runs.
package owner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Self returns this process's owner string:
// "<hostname>/<pid>/<start time in clock ticks after boot>". The start time
// tells a process apart from a later one that reuses its pid.
func Self() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("owner label: %w", err)
	}
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return "", fmt.Errorf("owner label: %w", err)
	}
	return Format(host, pid, start), nil
}

// RunID returns id, or when it is "" a new random run id (16 hex digits),
// which names and labels what a run creates.
func RunID(id string) (string, error) {
	if id != "" {
		return id, nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Format returns the owner string of process pid of host started at start.
func Format(host string, pid int, start string) string {
	return fmt.Sprintf("%s/%d/%s", host, pid, start)
}

// processStart returns field 22 of /proc/<pid>/stat, the process's start
// time in clock ticks after boot; the error wraps os.ErrNotExist when there
// is no such process.
func processStart(pid int) (string, error) {
	start, _, err := processStat(pid)
	return start, err
}

// processStat returns fields 22 (the start time) and 3 (the state, e.g.
// "R", "S", "Z") of /proc/<pid>/stat.
func processStat(pid int) (start, state string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", err
	}
	// Field 2, the command, is parenthesised and may hold spaces and
	// parentheses; field 3 follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	const field22 = 22 - 3
	if len(fields) <= field22 {
		return "", "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return fields[field22], fields[0], nil
}

// Gone reports whether owner (as Self returns it) names a process of host,
// this machine, that no longer runs: its pid is free, or taken by a process
// started at another time. Owners of other hosts, and malformed strings,
// are not gone: nothing here can tell.
func Gone(owner, host string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 || parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	start, state, err := processStat(pid)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	// A killed process that its parent has not reaped yet is a zombie
	// (state Z): it runs nothing any more.
	return start != parts[2] || state == "Z"
}

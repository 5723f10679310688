package kube

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Signals `lbchaos signal` sends.
var signals = map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT}

// SignalPeers is `lbchaos signal SIG`, run by an ephemeral container in a
// pod that shares its process namespace: it sends SIGSTOP or SIGCONT to
// every process of the namespace but its init (pid 1, the pod's sandbox),
// itself, other `lbchaos signal` processes (earlier ephemeral containers)
// and an app's lbchaos sidecar (`lbchaos serve --upstream`), and returns
// the pids it signalled. procDir is /proc.
func SignalPeers(procDir, sig string) ([]int, error) {
	s, ok := signals[sig]
	if !ok {
		return nil, fmt.Errorf("signal %q: want STOP or CONT", sig)
	}
	pids, err := peers(procDir, os.Getpid())
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, errors.New("no process to signal: the pod does not share its process namespace (shareProcessNamespace)")
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, s); err != nil {
			errs = append(errs, fmt.Errorf("SIG%s to pid %d: %w", sig, pid, err))
		}
	}
	return pids, errors.Join(errs...)
}

// peers lists the pids under procDir but 1, self and those whose command
// line is `lbchaos signal ...` or `lbchaos serve ... --upstream ...`, in
// ascending order.
func peers(procDir string, self int) ([]int, error) {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 || pid == self {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile, or a kernel thread's empty one
		}
		args := bytes.Split(cmd, []byte{0})
		if len(args) >= 2 && filepath.Base(string(args[0])) == "lbchaos" {
			if sub := string(args[1]); sub == "signal" || sub == "serve" && slices.ContainsFunc(args, isUpstreamFlag) {
				continue
			}
		}
		out = append(out, pid)
	}
	sort.Ints(out)
	return out, nil
}

func isUpstreamFlag(arg []byte) bool {
	a := string(arg)
	return a == "--upstream" || a == "-upstream" || strings.HasPrefix(a, "--upstream=") || strings.HasPrefix(a, "-upstream=")
}

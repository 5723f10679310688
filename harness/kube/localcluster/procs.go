package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a process Up started, as recorded.
type Proc struct {
	Name string   `json:"name"`
	PID  int      `json:"pid"`
	Exe  string   `json:"exe"`
	Args []string `json:"args"`
}

// startProc starts exe detached from the caller (own session, stdin from
// /dev/null, stdout and stderr to logFile), so that it outlives `go run`
// and make. done is closed when it exits while the caller still runs.
func startProc(name, exe string, args []string, logFile string) (Proc, <-chan struct{}, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Proc{}, nil, err
	}
	defer log.Close()
	// Recorded as /proc/<pid>/exe will read: without symlinks.
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Proc{}, nil, fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return Proc{Name: name, PID: cmd.Process.Pid, Exe: exe, Args: args}, done, nil
}

// procExe is the resolved executable of pid, "" when it is gone. A binary
// replaced on disk while it runs reads "<path> (deleted)".
func procExe(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(exe, " (deleted)")
}

func procCmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

func alive(pid int) bool {
	// A zombie has no exe link; it is dead for our purposes.
	return procExe(pid) != ""
}

// ours reports whether p.PID still runs p.Exe (a PID can be reused).
func (p Proc) ours() bool { return p.PID > 0 && procExe(p.PID) == p.Exe }

// stopPIDs sends SIGTERM to each pid, waits up to grace for all of them,
// then SIGKILLs what is left and waits again. It returns the pids that
// survived.
func stopPIDs(pids []int, grace time.Duration) []int {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	left := waitGone(pids, grace)
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return waitGone(left, 5*time.Second)
}

func waitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allPIDs lists the PIDs in /proc.
func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// MatchProcs returns the PIDs whose executable is one of exes, or whose
// command line mentions one of marks (paths only this cluster uses: its
// containerd config and socket). Exact paths, never a name: the host's
// own containerd runs the same binary as ours.
func MatchProcs(exes, marks []string) []int {
	want := map[string]bool{}
	for _, e := range exes {
		want[e] = true
		if real, err := filepath.EvalSymlinks(e); err == nil {
			want[real] = true
		}
	}
	var out []int
	for _, pid := range allPIDs() {
		if exe := procExe(pid); exe != "" && want[exe] {
			out = append(out, pid)
			continue
		}
		cl := procCmdline(pid)
		for _, m := range marks {
			if m != "" && strings.Contains(cl, m) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// cgroupPIDs lists the processes in dir and every cgroup below it.
func cgroupPIDs(dir string) []int {
	var pids []int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroupTree removes dir and the cgroups below it, deepest first
// (a cgroup directory goes with rmdir, never with its files).
func removeCgroupTree(dir string) error {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		for try := 0; try < 20; try++ {
			if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}

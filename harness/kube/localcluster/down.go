package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// stopOrder stops kube-proxy first (it would write its rules again after
// the restore, and leaves them behind on SIGTERM), the kubelet next (it
// would restart containers), the control plane next and containerd, whose
// tasks go before it, last.
var stopOrder = []string{"kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}

// ErrHostDiffers is returned by Down when the host does not match the
// record after the restore; the differences have been printed.
var ErrHostDiffers = errors.New("the host differs from its state before kube-up")

// Down stops every process of the cluster, removes what its pods left,
// restores the recorded host state, deletes the state directory and then
// checks the host against the record. Without a record (nothing was up) it
// still sweeps for the cluster's processes. It is safe to run again.
func Down(ctx context.Context, o Options) error {
	logf := func(f string, a ...any) { fmt.Fprintf(o.Log, f+"\n", a...) }
	rec, err := loadRecord(o.RecordFile())
	if err != nil {
		return fmt.Errorf("read %s: %w", o.RecordFile(), err)
	}
	l := o.Layout
	if rec != nil {
		l = rec.layout()
	}
	var errs []error

	// 1. Recorded processes, by PID, each only while it still runs its
	// recorded binary.
	if rec != nil {
		byName := map[string]Proc{}
		for _, p := range rec.Procs {
			byName[p.Name] = p
		}
		for _, name := range stopOrder {
			if p, ok := byName[name]; ok && p.ours() {
				if left := stopPIDs([]int{p.PID}, 10*time.Second); len(left) > 0 {
					errs = append(errs, fmt.Errorf("%s (pid %d) did not stop", name, p.PID))
				} else {
					logf("kube-down: %s stopped", name)
				}
			}
		}
		// 2. The pods' containers, while their containerd still runs.
		if socketAnswers(l.ContainerdSocket()) {
			removeTasks(ctx, l, logf)
		}
		if p, ok := byName["containerd"]; ok && p.ours() {
			if left := stopPIDs([]int{p.PID}, 10*time.Second); len(left) > 0 {
				errs = append(errs, fmt.Errorf("containerd (pid %d) did not stop", p.PID))
			} else {
				logf("kube-down: containerd stopped")
			}
		}
	}
	// 3. A sweep by exact binary path and by this cluster's containerd
	// socket (its shims), then whatever is left in the kubelet's cgroups.
	skip := map[int]bool{os.Getpid(): true, os.Getppid(): true}
	var sweep []int
	for _, pid := range MatchProcs(l.exes(), l.marks()) {
		if !skip[pid] {
			sweep = append(sweep, pid)
		}
	}
	if len(sweep) > 0 {
		logf("kube-down: sweeping processes %v", sweep)
		if left := stopPIDs(sweep, 5*time.Second); len(left) > 0 {
			errs = append(errs, fmt.Errorf("processes %v did not stop", left))
		}
	}
	var beforeCg []string
	if rec != nil {
		beforeCg = rec.Before.Cgroups
	}
	for _, cg := range setDiff(kubepodsCgroups(), beforeCg) {
		if rec == nil {
			errs = append(errs, fmt.Errorf("cgroup %s exists and there is no record to say it is ours", cg))
			continue
		}
		if pids := cgroupPIDs(cg); len(pids) > 0 {
			logf("kube-down: killing %d pod processes left in %s", len(pids), cg)
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			waitGone(pids, 5*time.Second)
		}
		if err := removeCgroupTree(cg); err != nil {
			errs = append(errs, err)
		}
	}

	// 4. Mounts: under the state directory, and under the watched host
	// paths the cluster created (netns files in /run/netns among them).
	var created []string
	if rec != nil {
		for _, p := range WatchedPaths {
			if rec.Before.Paths[p] == "absent" {
				created = append(created, p)
			}
		}
	}
	prefixes := append([]string{l.StateDir}, created...)
	var newNetns []string
	if rec != nil && rec.Before.Paths["/run/netns"] != "absent" {
		// /run/netns was there before: only the entries the record lacks.
		for _, e := range setDiff(listDir("/run/netns"), pathEntries(rec.Before.Paths["/run/netns"])) {
			newNetns = append(newNetns, filepath.Join("/run/netns", e))
		}
		prefixes = append(prefixes, newNetns...)
	}
	if err := unmountUnder(prefixes, logf); err != nil {
		errs = append(errs, err)
	}
	for _, p := range newNetns {
		os.Remove(p)
	}

	// 5. The bridge (its veths went with the pods' network namespaces).
	if _, err := os.Stat("/sys/class/net/" + BridgeName); err == nil {
		if out, err := exec.Command("ip", "link", "delete", BridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link delete %s: %v: %s", BridgeName, err, out))
		} else {
			logf("kube-down: link %s deleted", BridgeName)
		}
	}

	if rec == nil {
		if _, err := os.Stat(l.StateDir); err == nil {
			if err := removeTree(l.StateDir); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			logf("kube-down: no cluster was recorded in %s; no process of one runs", l.StateDir)
		}
		return errors.Join(errs...)
	}

	// 6. Sysctls, iptables and nftables tables as recorded.
	errs = append(errs, RestoreHostState(rec.Before, l.RulesDir(), logf)...)

	// 7. Directories: what the cluster created on the host, and the state
	// directory but for the record and the saved rules (kept until the
	// check passes, so that a second kube-down can try again).
	for _, p := range created {
		if _, err := os.Lstat(p); err == nil {
			if err := removeTree(p); err != nil {
				errs = append(errs, err)
			} else {
				logf("kube-down: %s removed", p)
			}
		}
	}
	for _, e := range listDir(l.StateDir) {
		if e == filepath.Base(l.RecordFile()) || e == filepath.Base(l.RulesDir()) {
			continue
		}
		if err := removeTree(filepath.Join(l.StateDir, e)); err != nil {
			errs = append(errs, err)
		}
	}

	// 8. The check.
	diffs := Check(rec, l)
	if len(diffs) > 0 {
		logf("kube-down: the host differs from its state before kube-up:")
		for _, d := range diffs {
			logf("  %s", d)
		}
		logf("kube-down: the record stays in %s; fix the above and run kube-down again", l.RecordFile())
		return errors.Join(append(errs, ErrHostDiffers)...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(l.StateDir); err != nil {
		return err
	}
	logf("kube-down: host state check passed: sysctls (%d), iptables/ip6tables rules (%d dumps), nft tables, mounts, links, cgroups and %d host paths match the record; no process of the cluster runs",
		len(rec.Before.Sysctls), len(rec.Before.Rules), len(rec.Before.Paths))
	return nil
}

// Check compares the host with rec's record and lists the differences,
// including any process of the cluster still running and any mount left
// under its state directory.
func Check(rec *Record, l Layout) []string {
	now, err := CaptureHostState("")
	if err != nil {
		return []string{"capture: " + err.Error()}
	}
	diffs := Diff(rec.Before, now)
	for _, pid := range MatchProcs(l.exes(), l.marks()) {
		if pid != os.Getppid() {
			diffs = append(diffs, fmt.Sprintf("process %d still runs: %s", pid, procCmdline(pid)))
		}
	}
	return diffs
}

// removeTasks kills and deletes every task of the CRI namespace, which
// unmounts the containers' root filesystems.
func removeTasks(ctx context.Context, l Layout, logf func(string, ...any)) {
	ctr := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, "ctr", append([]string{"--address", l.ContainerdSocket(), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	}
	out, err := ctr("tasks", "list", "--quiet")
	if err != nil {
		logf("kube-down: ctr tasks list: %v: %s", err, out)
		return
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		ctr("tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range ids {
		// The CRI plugin deletes a task whose process exited by itself.
		if out, err := ctr("tasks", "delete", "--force", id); err != nil && !strings.Contains(string(out), "not found") {
			logf("kube-down: ctr tasks delete %s: %v: %s", id, err, strings.TrimSpace(string(out)))
		}
	}
	if len(ids) > 0 {
		logf("kube-down: %d containers' tasks removed", len(ids))
	}
}

// unmountUnder unmounts every mount point at or below one of prefixes,
// deepest first, detaching what a plain unmount cannot.
func unmountUnder(prefixes []string, logf func(string, ...any)) error {
	var errs []error
	for round := 0; round < 5; round++ {
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return err
		}
		var points []string
		for _, m := range parseMountinfo(mi) {
			if under(m.point, prefixes) {
				points = append(points, m.point)
			}
		}
		if len(points) == 0 {
			return nil
		}
		sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
		errs = errs[:0]
		for _, p := range points {
			if err := syscall.Unmount(p, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
					errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
				}
			}
		}
		logf("kube-down: %d mounts removed", len(points))
	}
	return errors.Join(errs...)
}

func under(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if p != "" && (path == p || strings.HasPrefix(path, p+"/")) {
			return true
		}
	}
	return false
}

// removeTree deletes path unless something is still mounted at or below
// it: os.RemoveAll would descend into a mounted file system.
func removeTree(path string) error {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, m := range parseMountinfo(mi) {
		if under(m.point, []string{path}) {
			return fmt.Errorf("not removing %s: %s is still mounted", path, m.point)
		}
	}
	return os.RemoveAll(path)
}

func listDir(dir string) []string {
	entries, _ := os.ReadDir(dir)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

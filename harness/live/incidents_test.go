package live

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// childProxy returns the pid of a proxy under test that is a child of
// this process and whose command line contains dir (e.g. "lbchaos-nginx-"),
// or 0.
func childProxy(dir string) int {
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ")".
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(self) {
			continue
		}
		pid := filepath.Base(filepath.Dir(f))
		cmd, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), dir) {
			continue
		}
		n, _ := strconv.Atoi(pid)
		return n
	}
	return 0
}

// TestProxyExitIsAnEvent: nginx under test is killed (its whole process
// group, SIGKILL) from outside about 1.5 s into a 3 s run. The run goes
// on, every later request failing; the exit is a proxy-exit event with
// its time and the proxy's status, in summary.json, report.md and a note,
// and no proxy process is left behind.
func TestProxyExitIsAnEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through a real proxy")
	}
	runtest.Need(t, proxies.Installed(proxyspec.Nginx, "unused"))
	exp := runtest.MustExperiment(t, "proxy-exit", `
duration: 3s
rate: 300
timeout: 1s
instances: {count: 3, workers: 8, service: {dist: fixed, value: 2ms}}
strategies: [nginx:round_robin]
`)
	killed := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		var pid int
		for pid == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			pid = childProxy("lbchaos-nginx-")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(1500 * time.Millisecond):
		}
		// The first child found may have been nginx -t checking the
		// configuration, gone by now (found first when the machine is
		// busy): kill the one serving.
		if p := childProxy("lbchaos-nginx-"); p != 0 {
			pid = p
		}
		killed <- time.Now()
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its group: master and workers
	}()
	sum, err := run(context.Background(), exp, Options{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-killed:
	default:
		t.Fatal("nginx was never killed")
	}
	st := runtest.StrategyByName(t, sum, "nginx:round_robin")
	runtest.CheckAccounting(t, st)
	var exits []reports.Event
	for _, e := range st.Events {
		if e.Kind == reports.EventProxyExit {
			exits = append(exits, e)
		}
	}
	if len(exits) != 1 {
		t.Fatalf("proxy-exit events %+v, want one", exits)
	}
	e := exits[0]
	t.Logf("proxy-exit event: %+v", e)
	if e.Instance != reports.ProxyInstance {
		t.Errorf("proxy-exit of instance %d, want %d", e.Instance, reports.ProxyInstance)
	}
	if e.TimeS < 0.5 || e.TimeS > 2.8 {
		t.Errorf("proxy exit at %.3f s, want about 1.5 s into the run", e.TimeS)
	}
	if !strings.Contains(e.Detail, "nginx (pid ") || !strings.Contains(e.Detail, "signal: killed") {
		t.Errorf("detail %q lacks the process or its status", e.Detail)
	}
	if len(e.Log) == 0 {
		t.Errorf("no log lines")
	}
	// Before the kill every request was answered; after it none was.
	if st.ErrorRatio < 0.2 || st.ErrorRatio > 0.8 {
		t.Errorf("error ratio %.3f, want about half: the second half of the run through a dead proxy", st.ErrorRatio)
	}
	if st.Unattributed == 0 {
		t.Errorf("no unattributed requests: those sent to the dead proxy reached no instance")
	}
	found := false
	for _, n := range sum.Notes {
		found = found || strings.Contains(n, "the proxy under test exited at")
	}
	if !found {
		t.Errorf("no note on the proxy's exit in %q", sum.Notes)
	}
	dir := t.TempDir()
	if err := reports.WriteAll(dir, sum); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "**the proxy exited at ") || !strings.Contains(string(md), "signal: killed") {
		t.Errorf("report.md does not show the proxy's exit")
	}
	if left := runtest.ProxyLeftovers(t); len(left) > 0 {
		t.Errorf("proxy processes left behind: %q", left)
	}
}

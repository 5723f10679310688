package proxies

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// TestProxyExit: a proxy killed from outside is seen to exit at once, and
// not as stopped by the harness; one stopped by Stop is.
func TestProxyExit(t *testing.T) {
	runtest.Need(t, Installed(proxyspec.Nginx, "unused"))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)

	x, err := Start(t.Context(), "nginx:round_robin", "", []*url.URL{u}, time.Second, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	select {
	case <-x.Exited():
		t.Fatal("exited before it was killed")
	default:
	}
	killed := time.Now()
	if err := syscall.Kill(-x.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-x.Exited():
	case <-time.After(time.Second):
		t.Fatal("the exit was not seen within a second")
	}
	t.Logf("exit seen %v after the kill", time.Since(killed))
	status, stopped, log := x.Exit()
	if stopped || !strings.Contains(status, "signal: killed") || len(log) == 0 {
		t.Errorf("Exit() = %q, stopped %v, log %q; want killed, not stopped, some log", status, stopped, log)
	}

	// Only the master killed (as the kernel's OOM killer would): its
	// workers live on, holding its output, and yet the exit is seen, and
	// Close leaves no worker behind.
	w, err := Start(t.Context(), "nginx:round_robin", "", []*url.URL{u}, time.Second, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := syscall.Kill(w.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Exited():
	case <-time.After(exitWaitDelay + 2*time.Second):
		t.Fatal("the master's exit was not seen while its workers held its output")
	}
	if status, stopped, _ := w.Exit(); stopped || !strings.Contains(status, "signal: killed") {
		t.Errorf("master killed: Exit() = %q, stopped %v; want killed, not stopped", status, stopped)
	}
	w.Close()
	for deadline := time.Now().Add(3 * time.Second); groupAlive(w.Pid()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("3 s after Close a process of nginx's group %d still runs", w.Pid())
			break
		}
	}

	y, err := Start(t.Context(), "nginx:round_robin", "", []*url.URL{u}, time.Second, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	y.Stop()
	if _, stopped, _ := y.Exit(); !stopped {
		t.Errorf("a proxy stopped by Stop: Exit says not stopped")
	}
}

// groupAlive reports whether a process of process group pgid runs: one
// that is not a zombie waiting for its reaper.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, not ")".
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) >= 3 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestStartMatchStop(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	mark := fmt.Sprintf("lbchaos-test-mark-%d", time.Now().UnixNano())
	logFile := filepath.Join(t.TempDir(), "p.log")
	p, done, err := startProc("sleeper", sh, []string{"-c", "echo started; while :; do sleep 0.1; done", mark}, logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopPIDs([]int{p.PID}, time.Second) }) // also when a check below fails
	// The shell writes to the log once it runs: stopped before, on a busy
	// machine, it has written nothing.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(logFile); string(b) == "started\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the process wrote nothing to its log within 5 s")
		}
	}
	if !p.ours() {
		t.Errorf("ours() = false for a running %s", p.Exe)
	}
	// The shell's forks carry the mark until they exec sleep.
	if got := MatchProcs(nil, []string{mark}); !slices.Contains(got, p.PID) {
		t.Fatalf("MatchProcs by mark = %v, want %d among them", got, p.PID)
	}
	if got := MatchProcs([]string{sh}, nil); !slices.Contains(got, p.PID) {
		t.Fatalf("MatchProcs by %s = %v, want %d among them", sh, got, p.PID)
	}
	if left := stopPIDs([]int{p.PID}, 2*time.Second); len(left) > 0 {
		t.Fatalf("stopPIDs left %v", left)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("done not closed after the process exited")
	}
	if b, _ := os.ReadFile(logFile); string(b) != "started\n" {
		t.Errorf("log %q, want the process's output", b)
	}
	if got := MatchProcs(nil, []string{mark}); slices.Contains(got, p.PID) {
		t.Errorf("MatchProcs after stop = %v", got)
	}
}

func TestPollReportsDeath(t *testing.T) {
	done := make(chan struct{})
	close(done)
	err := poll(t.Context(), time.Second, []watched{{"etcd", done}}, "x", func() (bool, string) { return false, "" })
	if _, ok := err.(errDied); !ok || err.Error() != "etcd exited" {
		t.Errorf("poll = %v, want etcd exited", err)
	}
}

package owner

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestGone(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(self, host+"/") {
		t.Fatalf("Self() = %q, want it to start with the host name %q", self, host)
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(self, "/")
	for _, tc := range []struct {
		name  string
		owner string
		gone  bool
	}{
		{"this process", self, false},
		{"an exited process", Format(host, exited.Process.Pid, "1"), true},
		{"this pid, started at another time", Format(host, os.Getpid(), parts[2]+"0"), true},
		{"another host", Format("elsewhere-"+host, exited.Process.Pid, "1"), false},
		{"malformed", host + "/x/1", false},
		{"empty", "", false},
	} {
		if got := Gone(tc.owner, host); got != tc.gone {
			t.Errorf("%s: Gone(%q) = %v, want %v", tc.name, tc.owner, got, tc.gone)
		}
	}
}

// A process killed but not yet reaped by its parent (a zombie) is gone:
// the next run sweeps what it left at once.
func TestGoneZombie(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	start, err := processStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	o := Format(host, pid, start)
	if Gone(o, host) {
		t.Fatal("a running process is gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; !Gone(o, host); i++ {
		if i > 500 {
			t.Fatal("a killed, unreaped process is not gone after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

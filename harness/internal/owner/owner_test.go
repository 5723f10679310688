package owner

import (
	"os"
	"os/exec"
	"strings"
	"testing"
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

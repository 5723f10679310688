package live

import (
	"os/exec"
	"syscall"
)

// endWithParent puts cmd in a process group of its own, so that a
// terminal's Ctrl-C reaches the coordinator alone, which interrupts its
// generators once (a second interrupt would end one before it wrote its
// results); and has the kernel interrupt cmd when this process dies, so
// that no generator outlives a coordinator killed outright.
func endWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
}

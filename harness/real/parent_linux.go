package real

import (
	"os/exec"
	"syscall"
)

// endWithParent has the kernel interrupt cmd when this process dies, so
// that no generator outlives a coordinator killed outright.
func endWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
}

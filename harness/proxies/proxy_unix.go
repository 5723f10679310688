//go:build linux

package proxies

import "syscall"

// proxySysProcAttr puts a proxy under test in its own process group (so
// that its workers can be signalled with it) and has the kernel kill it
// should lbchaos die without stopping it.
func proxySysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup SIGKILLs process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

//go:build !linux

package proxies

import (
	"os"
	"syscall"
)

func proxySysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

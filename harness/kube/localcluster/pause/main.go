// Command pause is the sandbox ("pause") image of lbchaos's local
// Kubernetes: a static program, built FROM scratch with no registry
// involved, that holds a pod's namespaces. As PID 1 of a pod that shares
// its process namespace it also reaps orphaned children. It exits 0 on
// SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

package proxies

import (
	"fmt"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

// Exited is closed once the proxy's process has exited, whether it was
// stopped (Stop, Close) or died on its own.
func (x *Proxy) Exited() <-chan struct{} { return x.p.exited }

// Exit says, once Exited is closed, how the process ended ("nginx (pid
// 4242) exited: signal: killed"), whether the harness was stopping it
// (stopped: the exit was expected), and the last lines of its output and
// error log.
func (x *Proxy) Exit() (status string, stopped bool, log []string) {
	p := x.p
	<-p.exited
	status = fmt.Sprintf("%s (pid %d) exited", p.cfg.spec.Kind, p.cmd.Process.Pid)
	if p.waitErr != nil {
		status += ": " + p.waitErr.Error()
	} else {
		status += " with status 0"
	}
	log = fleet.LastLines(p.diagnostics(), fleet.LogLines)
	if len(log) == 1 && log[0] == "no output" {
		log = []string{fmt.Sprintf("(%s wrote nothing to its output or error log)", p.cfg.spec.Kind)}
	}
	return status, p.stopping.Load(), log
}

// Pid is the process id of the proxy's main process.
func (x *Proxy) Pid() int { return x.p.cmd.Process.Pid }

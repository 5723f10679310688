package netfault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// callTimeout bounds one iptables call. A call waits for the xtables lock
// (-w) while another process holds it, and gives up with the context.
const callTimeout = 10 * time.Second

// callMu serializes this process's iptables calls: each reads and writes
// the whole table, and concurrent writers would only queue on the lock.
var callMu sync.Mutex

// Available returns nil when this process can add packet filter rules, and
// otherwise why not, worded to follow a fault's name (`"loss" needs root
// to add iptables rules (running as uid 1000)`): it needs root and an
// iptables command that lists the filter table.
func Available() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("needs root to add iptables rules (running as uid %d)", uid)
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("needs iptables to drop packets, and none is installed (%v)", err)
	}
	if _, err := iptables("-S", "INPUT"); err != nil {
		return fmt.Errorf("needs iptables to drop packets, and it does not work here: %w", err)
	}
	return nil
}

// iptables runs `iptables -w ARGS` on the filter table and returns its
// standard output. Its error quotes the command and what iptables said.
func iptables(args ...string) (string, error) {
	callMu.Lock()
	defer callMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("iptables %s: no answer within %v", quoteArgs(args), callTimeout)
	}
	if err != nil {
		msg := said(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", &callError{args: args, msg: msg}
	}
	return stdout.String(), nil
}

// callError is a failed iptables call.
type callError struct {
	args []string
	msg  string
}

func (e *callError) Error() string {
	return fmt.Sprintf("iptables %s: %s", quoteArgs(e.args), e.msg)
}

// gone reports whether err is iptables saying that the chain or rule it
// was asked to delete is not there: someone removed it already (a sweep
// of another process, lbchaos clean).
func gone(err error) bool {
	var ce *callError
	if !errors.As(err, &ce) {
		return false
	}
	for _, s := range []string{"does not exist", "No chain/target/match by that name", "Bad rule", "doesn't exist"} {
		if strings.Contains(ce.msg, s) {
			return true
		}
	}
	return false
}

// said is what iptables wrote on its standard error, without its
// warnings about the other backend's tables and its usage hint.
func said(stderr string) string {
	var keep []string
	for l := range strings.SplitSeq(strings.TrimSpace(stderr), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "# Warning") || strings.HasPrefix(l, "Try `iptables -h'") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "; ")
}

// quoteArgs writes args as a shell would take them back.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = `"` + a + `"`
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

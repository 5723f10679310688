// Command lbchaos shows what a load-balancing strategy really does when one
// backend goes bad: it runs an experiment's strategies against real HTTP
// backends with injected faults and reports per-instance latency, errors and
// traffic share.
//
//	lbchaos list [experiments|strategies]
//	lbchaos run NAME|FILE [--duration 10s] [--rate 2000] [--seed 7] [--strategies a,b] [--out DIR] [--backends auto|process|docker|kube|external] [--backend URL ... [--sidecar URL ...]] [--skip-missing]
//	lbchaos serve --id N --listen ADDR [--workers W] [--service fixed:10ms] ...
//	lbchaos serve --upstream http://HOST:PORT [--listen ADDR] [--health-path /healthz] ...
//	lbchaos help [COMMAND]
//	lbchaos version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lbchaos/lbchaos/harness"
)

// exitError carries a process exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	// A closed stdout (lbchaos run ... | head) makes writes fail instead of
	// ending the process, so that a run still removes its containers and
	// namespaces. (Handled, not ignored: children such as nginx start
	// with the default.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default so a second one ends
		// the process at once.
		<-ctx.Done()
		stop()
	}()
	harness.Version = version()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintln(os.Stderr, "lbchaos:", err)
		os.Exit(code)
	}
}

// run runs the command line args; a command's --help is no error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		writeUsage(stderr)
		return &exitError{2, errors.New("no command given")}
	}
	switch args[0] {
	case "list":
		return cmdList(args[1:], stdout)
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "sweep":
		return cmdSweep(ctx, args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "proxy":
		return cmdProxy(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout)
	case "compare":
		return cmdCompare(args[1:], stdout)
	case "simcheck":
		return cmdSimcheck(ctx, args[1:], stdout)
	case "junit":
		return cmdJUnit(args[1:], stdout)
	case "image":
		return cmdImage(ctx, args[1:], stdout, stderr)
	case "generate":
		return cmdGenerate(ctx, args[1:], os.Stdin, stdout, stderr)
	case "clean":
		return cmdClean(ctx, args[1:], stdout, stderr)
	case "signal":
		return cmdSignal(args[1:], stdout, stderr)
	case "completion":
		return cmdCompletion(args[1:], stdout)
	case "version":
		return cmdVersion(args[1:], stdout)
	case "--version", "-version":
		return cmdVersion(nil, stdout)
	case "help":
		return cmdHelp(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		writeUsage(stdout)
		return nil
	default:
		return unknownCommand(args[0])
	}
}

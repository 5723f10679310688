// Command lbchaos shows what a load-balancing strategy really does when one
// backend goes bad: it runs an experiment's strategies against real HTTP
// backends with injected faults and reports per-instance latency, errors and
// traffic share.
//
//	lbchaos list
//	lbchaos run NAME|FILE [--duration 10s] [--rate 2000] [--seed 7] [--strategies a,b] [--out DIR] [--backends auto|process|docker|kube|external [--backend URL ...] [--sidecar URL ...]]
//	lbchaos serve --id N --listen ADDR [--workers W] [--service fixed:10ms] ...
//	lbchaos serve --upstream http://HOST:PORT [--listen ADDR] [--health-path /healthz] ...
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
)

const usage = `lbchaos: what a load-balancing strategy does when one backend goes bad

Usage:
  lbchaos list                      the shipped experiments
  lbchaos run NAME|FILE [flags]     run an experiment (lbchaos run --help)
  lbchaos serve [flags]             run one fake backend instance, or with --upstream URL a fault
                                    sidecar in front of your own service (lbchaos serve --help)
  lbchaos proxy [flags]             serve a built-in strategy as a reverse proxy (lbchaos proxy --help)
  lbchaos report RUN                re-render a run's report and plots from its summary.json
  lbchaos compare [--fail-on-regression] RUN_A RUN_B
                                    headline metrics of two runs side by side (directories or summary.json files);
                                    a run --repeat folder compares by medians, changes beyond the noise only
  lbchaos junit [--out FILE] RUN... the runs' expectations as JUnit XML, one test case each
  lbchaos image [--binary PATH] [--repo R]
                                    build the backend container image, or with --repo any static
                                    binary's image (make example-image) (Docker)
  lbchaos clean [--kubeconfig PATH] remove every container and network lbchaos created (Docker) and
                                    every namespace (Kubernetes)
  lbchaos signal STOP|CONT          what the kube backends' pause runs inside a pod: signal the pod's
                                    other processes
  lbchaos generate [flags]          internal: one load generator of a distributed run (generators: N),
                                    started by lbchaos run; results on stdout for it to merge
  lbchaos version
`

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
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "lbchaos:", err)
		} else {
			code = 0
		}
		os.Exit(code)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{2, errors.New("no command given")}
	}
	switch args[0] {
	case "list":
		return cmdList(stdout)
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "proxy":
		return cmdProxy(ctx, args[1:], stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stderr)
	case "report":
		return cmdReport(args[1:], stdout)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "junit":
		return cmdJUnit(args[1:], stdout, stderr)
	case "image":
		return cmdImage(ctx, args[1:], stdout, stderr)
	case "generate":
		return cmdGenerate(ctx, args[1:], os.Stdin, stdout, stderr)
	case "clean":
		return cmdClean(ctx, args[1:], stdout, stderr)
	case "signal":
		return cmdSignal(args[1:], stderr)
	case "version":
		fmt.Fprintln(stdout, "lbchaos", version())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return &exitError{2, fmt.Errorf("unknown command %q", args[0])}
	}
}

// splitPositional lets flags come before or after the positional arguments:
// `run fast-fail --duration 5s` and `run --duration 5s fast-fail` both work.
func splitPositional(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/proxies/lbproxy"
)

// operands says what a command's positional arguments are, for shell
// completion.
type operands int

const (
	noOperands  operands = iota
	experiment           // a shipped experiment's name or a .yaml file
	runDir               // a run's directory or its summary.json
	signalName           // STOP or CONT
	commandName          // another command
	shellName            // bash, zsh or fish
	listName             // what lbchaos list lists
)

// command describes a subcommand for its help, the top-level usage and
// shell completion.
type command struct {
	name  string
	args  string // the synopsis after "lbchaos NAME"
	short string // one line in the top-level usage
	about string // the paragraph of lbchaos help NAME
	// flags defines the command's flags on fs, as the command itself
	// does; nil for a command without flags.
	flags func(fs *flag.FlagSet)
	// groups order the flags by topic in the help; nil lists them in
	// alphabetical order.
	groups   []flagGroup
	operands operands
}

// commands in the order of the top-level usage.
var commands = []command{
	{name: "list", args: "[--engine sim] [experiments|strategies|sweeps]", short: "the shipped experiments, or every strategy name", operands: listName,
		about: "Lists the experiments built into lbchaos, each with its description. Run one with lbchaos run NAME; copy its file from experiments/ to make your own. " +
			"lbchaos list strategies lists, one a line with its kind and what it does, every name an experiment's strategies (or --strategies) may use: the built-in strategies, the wrappers written after one (least-inflight+eject), " +
			"the real proxies' algorithms (nginx:, haproxy:, caddy:, and lbchaos: with a built-in strategy) and grpc-go's balancers (grpc:). lbchaos list sweeps lists the shipped sweeps (lbchaos sweep NAME), each with the experiment it varies."},
	{name: "run", args: "NAME|FILE [flags]", short: "run an experiment", operands: experiment,
		about: "Runs an experiment's strategies one after another against backends with injected faults, and writes summary.json, report.md, report.html and plots to the output directory. " +
			"NAME is a shipped experiment (lbchaos list); FILE a path to your own .yaml. Exit status 3 when an expectation of the file does not hold, 4 when one of its abort conditions tripped (the run stopped there; its results are kept), 130 when interrupted (the partial results are kept).",
		flags: func(fs *flag.FlagSet) { bindRun(fs) }, groups: runFlagGroups},
	{name: "sweep", args: "NAME|FILE [--vary ...] [flags]", short: "run an experiment over a grid of parameters and find each strategy's knee", operands: experiment,
		about: "Runs an experiment at every point of a grid, by default in the simulator, points in parallel: --vary gives each parameter's values (a list, a range, or a strategy's parameters in braces) and the sweep runs their product. " +
			"Each point writes its summary.json (no plots); the sweep writes sweep.json, sweep.csv and sweep.md (a table that fits a pull-request comment) and, over rate with --slo, each strategy's knee: the highest rate within the bound, and with --vary faults=on,off the capacity the fault costs. " +
			"NAME is a shipped sweep (lbchaos list sweeps) or an experiment with --vary; FILE a sweep file or an experiment file. Ctrl-C keeps the points done (exit status 130); --resume DIR runs the rest.",
		flags: func(fs *flag.FlagSet) { bindSweep(fs) }},
	{name: "validate", args: "FILE...", short: "check experiment files without running them", operands: experiment,
		about: "Loads and checks each experiment file (or shipped name) as lbchaos run would, without running anything, and prints every problem of every file, each with its line and field, or \"ok\". Exit status 0 when every file is valid, 2 when one is not: for editors and CI."},
	{name: "serve", args: "[flags]", short: "one fake backend instance, or a fault sidecar in front of your own service (--upstream URL)",
		about: "Runs one fake backend instance, or with --upstream a fault sidecar in front of a real HTTP or gRPC service; one port speaks HTTP/1.1, h2c and gRPC (method " + faultyserver.GRPCMethod + "). " +
			"Control API: GET/PUT/DELETE " + faultyserver.ControlPrefix + "fault, GET " + faultyserver.ControlPrefix + "stats, POST " + faultyserver.ControlPrefix + "reset, each with the header Authorization: Bearer <token> when the instance has a token (--token or " + faultyserver.TokenEnv + "); health: GET /healthz, open.",
		flags: func(fs *flag.FlagSet) { f := faultyserver.DefaultFlags; f.Bind(fs) }},
	{name: "proxy", args: "--listen ADDR --strategy SPEC --backend URL [--backend URL ...]", short: "serve a built-in strategy as a reverse proxy",
		about: "Serves a built-in strategy as an HTTP reverse proxy in front of the backends. Admin, read-only and open: GET /_lbchaos/stats (per backend, JSON), GET /metrics (the same in the Prometheus text format), GET /_lbchaos/ready.",
		flags: func(fs *flag.FlagSet) { f := lbproxy.DefaultFlags; f.Bind(fs) }},
	{name: "report", args: "RUN", short: "re-render a run's report and plots from its summary.json", operands: runDir,
		about: "Re-renders every artifact of a run (report.md, report.html, plots) from its saved summary.json, without running anything. RUN is the run's directory or its summary.json.",
		flags: func(fs *flag.FlagSet) { bindReport(fs) }},
	{name: "compare", args: "[--fail-on-regression] RUN_A RUN_B", short: "headline metrics of two runs side by side", operands: runDir,
		about: "Prints the headline metrics of two runs side by side; each RUN is a run's directory or its summary.json, or the folder of a repeated run (lbchaos run --repeat N), which compares by medians and ranges and reports only changes beyond the noise. " +
			"With --fail-on-regression, exits 3 when a strategy of RUN_B is worse than in RUN_A beyond the tolerance (and the noise), or missing from RUN_B.",
		flags: func(fs *flag.FlagSet) { bindCompare(fs) }},
	{name: "simcheck", args: "[flags] RUN_DIR...", short: "a real run beside the simulation calibrated from it", operands: runDir,
		about: "Simulates each real run's experiment (its duration, rate, seed and simulated strategies) twice, calibrated with the run's transport overhead (lbchaos run --engine sim --calibrate RUN_DIR) and uncalibrated, and prints per strategy the key metric and the faulty share of the real run and of both simulations, and whether the calibrated one agrees: within 10% of the real value or, for a share, 0.5 percentage points, whichever is larger. " +
			"RUN_DIR is a real run's directory (one generator, lbchaos's own HTTP instances). With --fail-on-disagreement, exits 3 when a calibrated figure does not agree.",
		flags: func(fs *flag.FlagSet) { bindSimcheck(fs) }},
	{name: "junit", args: "[--out FILE] [--name N] RUN...", short: "the runs' expectations as JUnit XML", operands: runDir,
		about: "Writes the expectations of each run (a run's directory or summary.json, or a repeated run's folder, checked on its medians) as JUnit XML: one test suite per run, one test case per expectation; a failed expectation is a failure, one not checked (strategy not run, or advisory) is skipped.",
		flags: func(fs *flag.FlagSet) { bindJUnit(fs) }},
	{name: "image", args: "[--binary PATH] [--repo R]", short: "build the backend container image (Docker)",
		about: "Builds (or finds) the backend container image, FROM scratch with a static lbchaos binary, and prints its reference. With --repo, puts any static linux binary (--binary, e.g. your own service) in an image of its own as its entry point (make example-image).",
		flags: func(fs *flag.FlagSet) { bindImage(fs) }},
	{name: "clean", args: "[--kubeconfig PATH]", short: "remove every container, network, namespace and packet filter rule lbchaos created",
		about: "Removes every container and network lbchaos created, of any run (Docker), the packet filter rules of its network faults and partitions (iptables, as root), and every lbchaos namespace of the Kubernetes cluster the kubeconfig names. Each is skipped when it does not answer.",
		flags: func(fs *flag.FlagSet) { bindClean(fs) }},
	{name: "signal", args: "STOP|CONT", short: "internal: signal a kube backend pod's other processes (its pause fault)", operands: signalName,
		about: "Internal: what the kube backends' pause fault runs in an ephemeral container of a backend pod, whose image has no kill: sends SIGSTOP or SIGCONT to the pod's other processes."},
	{name: "generate", args: "--strategy S --generator K --generators N --start T --target URL... < experiment.yaml", short: "internal: one load generator of a distributed run",
		about: "Internal: one load generator of a distributed run (generators: N), started by lbchaos run. It writes its results to stdout as lines starting with \"lbchaos-gen/1 \", its progress to stderr.",
		flags: func(fs *flag.FlagSet) { bindGenerate(fs) }},
	{name: "completion", args: "bash|zsh|fish", short: "a shell completion script", operands: shellName,
		about: "Prints a script that completes lbchaos's commands, their flags, experiment names, strategy names (--strategies) and file names in the shell. " +
			"bash: source <(lbchaos completion bash), or save it in /etc/bash_completion.d/lbchaos. zsh: source <(lbchaos completion zsh). fish: lbchaos completion fish > ~/.config/fish/completions/lbchaos.fish."},
	{name: "help", args: "[COMMAND]", short: "this usage, or a command's", operands: commandName,
		about: "Prints the usage of lbchaos, or of COMMAND; lbchaos COMMAND --help does the same."},
	{name: "version", short: "the version of this binary",
		about: "Prints the version of this binary: its module version, or the VCS revision and time it was built from (and \"modified\" when the checkout had changes). lbchaos --version does the same; every run's summary and report records it."},
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// writeUsage writes the top-level usage.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "lbchaos: what a load-balancing strategy does when one backend goes bad\n\nUsage:\n  lbchaos COMMAND [flags] [arguments]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.short)
	}
	tw.Flush()
	fmt.Fprint(w, "\nlbchaos help COMMAND (or lbchaos COMMAND --help) shows a command's usage and flags; lbchaos --version the version.\n")
}

// flagSet returns a flag set with c's flags defined.
func (c *command) flagSet() *flag.FlagSet {
	fs := newFlagSet(c.name)
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// writeHelp writes c's usage: a synopsis, a paragraph and its flags with
// their defaults.
func (c *command) writeHelp(w io.Writer) {
	synopsis := "lbchaos " + c.name
	if c.args != "" {
		synopsis += " " + c.args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, wrap(c.about, 78))
	writeFlags(w, c.flagSet(), c.groups)
}

// wrap breaks s into lines of at most width runes where it can.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		switch {
		case i == 0:
		case n+1+len(word) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// newFlagSet returns the flag set of the command name, for parseArgs.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("lbchaos "+name, flag.ContinueOnError)
	// The error is returned, and main prints it once; help goes to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses a command's arguments, flags before or after the
// operands, and returns the operands. -h, -help or --help writes the
// command's help to stdout and returns flag.ErrHelp, which run turns into
// exit status 0; a bad flag is a usage error (exit status 2).
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	name := strings.TrimPrefix(fs.Name(), "lbchaos ")
	pos, err := splitPositional(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		lookup(name).writeHelp(stdout)
		return nil, flag.ErrHelp
	case err != nil:
		return nil, &exitError{2, fmt.Errorf("%s: %w (see lbchaos help %s)", name, flagError(fs, err), name)}
	}
	return pos, nil
}

// splitPositional lets flags come before or after the positional arguments:
// `run fast-fail --duration 5s` and `run --duration 5s fast-fail` both work.
// After "--" every argument is positional.
func splitPositional(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// cmdHelp is lbchaos help [COMMAND].
func cmdHelp(args []string, stdout, stderr io.Writer) error {
	pos, err := parseArgs(newFlagSet("help"), args, stdout)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		writeUsage(stdout)
		return nil
	case 1:
		c := lookup(pos[0])
		if c == nil {
			return unknownCommand(pos[0])
		}
		c.writeHelp(stdout)
		return nil
	}
	return &exitError{2, fmt.Errorf("help takes one command, got %d (%s)", len(pos), strings.Join(pos, " "))}
}

package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/kube"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

func cmdList(args []string, w io.Writer) error {
	pos, err := parseArgs(newFlagSet("list"), args, w)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("list takes no arguments, got %q", pos)}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, name := range experiments.Names() {
		e, err := experiments.Load(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, e.Description)
	}
	return tw.Flush()
}

// runFlags are the flags of lbchaos run.
type runFlags struct {
	duration                 time.Duration
	rate                     float64
	seed                     uint64
	gens, repeat             int
	strats, out, results     string
	backends, health, engine string
	token, dnet              string
	quiet, raw, force        bool
	ext                      externalFlags
	kube                     kubeFlags
	cal                      calibrateFlags
}

func bindRun(fs *flag.FlagSet) *runFlags {
	f := &runFlags{}
	fs.DurationVar(&f.duration, "duration", 0, "attack duration per strategy, > 0 (default: the experiment's)")
	fs.Float64Var(&f.rate, "rate", 0, "requests per second, > 0 (default: the experiment's); with rate stages, their mean: every stage scales in proportion")
	fs.Uint64Var(&f.seed, "seed", 0, "seed for every random choice (default: the experiment's)")
	fs.StringVar(&f.strats, "strategies", "", "comma-separated strategies to run instead of the experiment's, e.g. round-robin,p2c; a file strategy's path, as in nginx:file(path=upstream.conf), is relative to the current directory unless the experiment lists that strategy")
	fs.StringVar(&f.out, "out", "", "output directory (default: RESULTS/NAME/<UTC timestamp>, with RESULTS/NAME/latest pointing at it)")
	fs.StringVar(&f.results, "results", "results", "parent directory of timestamped outputs when --out is not given")
	fs.StringVar(&f.backends, "backends", "auto", "where backends run: process (in this process, on 127.0.0.1), docker (one container each), kube (one pod each in a namespace of the run's own; see --kubeconfig and --kube-*; never chosen by auto), external (instances already running: --backend or instances.external), or auto (external when the file lists instances.external, docker when it gives instances.app, else docker when a daemon answers, else process)")
	fs.StringVar(&f.health, "health-path", "", "external instances without a sidecar: the path whose GET must answer (status below 500) before each strategy (default: instances.health, else /)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	fs.BoolVar(&f.raw, "raw", true, "keep raw data in each strategy's directory: every result in Vegeta's encoding, zstd-compressed (results.bin.zst: zstd -dc FILE | vegeta report), and an HdrHistogram log (latency.hlog); real engine only")
	fs.BoolVar(&f.force, "force", false, "with --out: write into a directory that is not empty, first removing a previous run's files there (only files lbchaos writes; anything else is kept)")
	fs.StringVar(&f.engine, "engine", "real", "real (real HTTP backends and load) or sim (the same model in virtual time: deterministic, seconds)")
	fs.IntVar(&f.gens, "generators", 0, "load generator processes sharing each strategy's load (default: the experiment's generators, else 1): request k goes to generator k mod N, all on one schedule; each runs its own balancers (replicas), so N generators are N independent client-side balancers; proxy strategies need 1")
	fs.StringVar(&f.token, "token", "", "the control token the run's backends require and its control calls send (Authorization: Bearer T): give the one external sidecars were started with (lbchaos serve --token or "+faultyserver.TokenEnv+"); default: $"+faultyserver.TokenEnv+", else a random one per run")
	fs.IntVar(&f.repeat, "repeat", 1, "run the experiment N times, with seeds SEED, SEED+1, ..., each into its own folder (OUT/rep-1, ...), and write the medians and ranges over them to OUT/repeats.json and repeats.md; expectations are checked on the medians, and lbchaos compare takes such a folder")
	fs.StringVar(&f.dnet, "docker-network", "auto", "how the harness reaches docker backends on 127.0.0.1: published (ports published by the engine; portable), host (containers share the host's network namespace; no userland proxy), or auto (host for a local Linux engine, else published)")
	f.kube.bind(fs)
	f.cal.bind(fs)
	fs.Var(urlList{&f.ext.backends}, "backend", "with --backends external: an instance's base URL, e.g. http://10.0.0.5:8080 (repeat, one per instance, in id order)")
	fs.Var(urlList{&f.ext.sidecars}, "sidecar", "with --backend: the base URL of the lbchaos sidecar in front of each instance (repeat, one per --backend, in order, or none); faults act through it and load goes to it")
	return f
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run")
	f := bindRun(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		lookup("run").writeHelp(stderr)
		return &exitError{2, fmt.Errorf("run takes one experiment name or file, got %d (%s)", len(pos), strings.Join(pos, " "))}
	}
	exp, err := experiments.Load(pos[0])
	if err != nil {
		return err
	}
	var ov experiments.Overrides
	ov.Duration, ov.Rate = f.duration, f.rate
	// A flag given must be valid: 0 does not mean "the experiment's".
	var bad error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "duration":
			if f.duration <= 0 {
				bad = fmt.Errorf("--duration: must be > 0, e.g. --duration 10s, got %v; leave it out to run for the experiment's duration", f.duration)
			}
		case "rate":
			if !(f.rate > 0) {
				bad = fmt.Errorf("--rate: must be > 0 requests per second, e.g. --rate 500, got %v; leave it out to run at the experiment's rate", f.rate)
			}
		case "seed":
			ov.Seed = &f.seed
		case "generators":
			if f.gens < 1 {
				bad = fmt.Errorf("--generators: must be >= 1, got %d", f.gens)
			}
			ov.Generators = f.gens
		}
	})
	if f.repeat < 1 {
		bad = fmt.Errorf("--repeat: must be >= 1, got %d", f.repeat)
	}
	if bad != nil {
		return &exitError{2, bad}
	}
	if f.strats != "" {
		for _, s := range splitStrategies(f.strats) {
			if s != "" {
				ov.Strategies = append(ov.Strategies, s)
			}
		}
	}
	if ov.External, err = f.ext.overrides(f.backends, f.engine); err != nil {
		return &exitError{2, err}
	}
	if err := f.kube.check(f.backends); err != nil {
		return &exitError{2, err}
	}
	if f.engine == "sim" {
		if err := simIgnores(fs); err != nil {
			return &exitError{2, err}
		}
	}
	ov.HealthPath = f.health
	if exp, err = exp.Apply(ov); err != nil {
		return &exitError{2, err}
	}
	var logw io.Writer = stderr
	var progress func(harness.Progress)
	if f.quiet {
		logw = io.Discard
	} else {
		pp := newProgressPrinter(stderr)
		logw, progress = pp, pp.update
	}
	dir, latest := f.out, ""
	if dir == "" {
		stamp := time.Now().UTC().Format("20060102T150405Z")
		latest = filepath.Join(f.results, exp.Name, "latest")
		dir = filepath.Join(f.results, exp.Name, stamp)
	}
	if err := reports.CheckOutDir(dir); err != nil && !f.force {
		if errors.Is(err, reports.ErrOutNotEmpty) {
			return &exitError{2, fmt.Errorf("--out %s: the directory is not empty; a new run would mix with its files: choose a new or empty directory, or add --force to remove a previous run's files first", dir)}
		}
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if f.repeat > 1 {
		return runRepeated(ctx, args, exp, f.repeat, dir, latest, ov.Duration != 0 || ov.Rate != 0, stdout, stderr)
	}
	opts := harness.Options{Log: logw, Progress: progress, Advisory: ov.Duration != 0 || ov.Rate != 0}
	switch f.engine {
	case "sim":
		cal, err := f.cal.load(fs)
		if err != nil {
			return &exitError{2, err}
		}
		opts.Engine = sim.Engine{Calibration: cal}
	case "real":
		if f.cal.path != "" {
			return &exitError{2, errors.New("--calibrate: only a simulation (--engine sim) is calibrated; --calibrate RUN_DIR takes the overhead of a real run")}
		}
		hostNet, err := hostNetwork(f.dnet)
		if err != nil {
			return &exitError{2, err}
		}
		// From the environment after parsing, not as the flag's default,
		// which the usage would print.
		tok := cmp.Or(f.token, os.Getenv(faultyserver.TokenEnv), faultyserver.NewToken())
		if err := faultyserver.CheckToken(tok); err != nil {
			return &exitError{2, fmt.Errorf("--token (or %s): %w", faultyserver.TokenEnv, err)}
		}
		provider, closeProvider, err := chooseProvider(ctx, f.backends, exp, dockerOptions(logw, hostNet), f.kube, tok)
		if err != nil {
			return err
		}
		// Deferred, so containers and namespaces go on success, error,
		// interrupt and panic.
		defer closeProvider()
		ropts := live.Options{Provider: provider}
		if self, err := os.Executable(); err == nil {
			ropts.LbchaosBinary = self // for lbchaos:... proxy strategies
		}
		if f.raw {
			ropts.RawDir = dir
		}
		if kp, ok := provider.(*kube.Provider); ok {
			if ropts.Launcher, err = f.kube.launcher(kp, exp); err != nil {
				return &exitError{2, err}
			}
		}
		opts.Engine = live.New(ropts)
	default:
		return &exitError{2, fmt.Errorf("--engine: unknown value %q (real or sim)", f.engine)}
	}
	// The output directory is created once the engine has accepted the
	// experiment, so a run that cannot start leaves nothing behind.
	opts.Ready = func() error {
		if f.force {
			kept, err := reports.ClearRun(dir)
			if err != nil {
				return fmt.Errorf("--force: clearing %s: %w", dir, err)
			}
			if len(kept) > 0 {
				fmt.Fprintf(logw, "lbchaos: --force: kept %d entries in %s that are not a run's (%s)\n", len(kept), dir, strings.Join(kept, ", "))
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(logw, "lbchaos: running %s (%s), seed %d, writing to %s\n", exp.Name, exp.Source, exp.Seed, dir)
		return nil
	}
	sum, runErr := harness.Run(ctx, exp, opts)
	if sum == nil {
		return runErr
	}
	f.cal.record(sum)
	if err := reports.WriteAll(dir, sum); err != nil {
		return errors.Join(runErr, fmt.Errorf("write report: %w", err))
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, reports.ExperimentFile), exp.Raw, 0o644); err != nil {
		return errors.Join(runErr, err)
	}
	if latest != "" {
		if err := pointLatest(latest, filepath.Base(dir)); err != nil {
			fmt.Fprintf(stderr, "lbchaos: could not update %s: %v\n", latest, err)
		}
	}
	fmt.Fprintln(stdout)
	if err := reports.WriteTable(stdout, sum); err != nil {
		return err
	}
	if len(sum.Expectations) > 0 {
		fmt.Fprintln(stdout)
		if err := reports.WriteExpectations(stdout, sum.Expectations); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nreport: %s\n        %s\n", filepath.Join(dir, reports.HTMLFile), filepath.Join(dir, reports.MarkdownFile))
	var failed *harness.ExpectationsFailed
	switch {
	case runErr == nil:
		return nil
	case errors.As(runErr, &failed):
		return &exitError{3, fmt.Errorf("%w; results are in %s", runErr, dir)}
	case errors.Is(runErr, harness.ErrInterrupted):
		return &exitError{130, fmt.Errorf("%w; the partial results are in %s", runErr, dir)}
	default:
		return fmt.Errorf("%w; results measured so far are in %s", runErr, dir)
	}
}

// splitStrategies splits a comma-separated list, keeping commas inside
// parentheses: "p2c,least-inflight+eject(consecutive=5,duration=5s)".
func splitStrategies(s string) []string {
	var out []string
	depth, startIdx := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[startIdx:i]))
				startIdx = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[startIdx:]))
}

// pointLatest makes link a relative symlink to target, replacing it atomically.
func pointLatest(link, target string) error {
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// simIgnores refuses the flags given to a simulation that only a real run
// uses: a simulation has no backends to place, reach or send a token to,
// and a flag that would silently do nothing is a mistake to point out.
func simIgnores(fs *flag.FlagSet) error {
	var names []string
	fs.Visit(func(fl *flag.Flag) {
		switch n := fl.Name; {
		case n == "backends", n == "docker-network", n == "token", n == "kubeconfig", strings.HasPrefix(n, "kube-"):
			names = append(names, "--"+n)
		}
	})
	switch len(names) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: applies to a real run's backends; a simulation (--engine sim) has none: leave it out, or run with --engine real", names[0])
	}
	return fmt.Errorf("%s: apply to a real run's backends; a simulation (--engine sim) has none: leave them out, or run with --engine real", strings.Join(names, ", "))
}

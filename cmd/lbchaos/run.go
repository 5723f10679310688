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
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/kube"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

func cmdList(args []string, w io.Writer) error {
	fs := newFlagSet("list")
	engineName := fs.String("engine", "", "with sim: only the experiments the simulator measures at least one strategy of (the others run only with --engine real)")
	pos, err := parseArgs(fs, args, w)
	if err != nil {
		return err
	}
	switch *engineName {
	case "", "real", "sim":
	default:
		return &exitError{2, fmt.Errorf("--engine: want real or sim, got %q", *engineName)}
	}
	switch topic, err := listTopic(pos); {
	case err != nil:
		return err
	case topic == "strategies":
		return listStrategies(w)
	case topic == "sweeps":
		return listSweeps(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, name := range experiments.Names() {
		e, err := experiments.Load(name)
		if err != nil {
			return err
		}
		if *engineName == "sim" && !sim.Measures(e) {
			continue
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
	skipMissing              bool
	plotsURL                 string
	ext                      externalFlags
	kube                     kubeFlags
	cal                      calibrateFlags
	metrics                  metricsFlags
}

func bindRun(fs *flag.FlagSet) *runFlags {
	f := &runFlags{}
	fs.DurationVar(&f.duration, "duration", 0, "attack duration per strategy, > 0 (default: the experiment's)")
	fs.Float64Var(&f.rate, "rate", 0, "requests per second, > 0 (default: the experiment's); with rate stages, their mean: every stage scales in proportion")
	fs.Uint64Var(&f.seed, "seed", 0, "seed for every random choice (default: the experiment's)")
	fs.StringVar(&f.strats, "strategies", "", "comma-separated strategies to run instead of the experiment's, e.g. round-robin,p2c (lbchaos list strategies names them all); a file strategy's path, as in nginx:file(path=upstream.conf), is relative to the current directory unless the experiment lists that strategy")
	fs.StringVar(&f.out, "out", "", "output directory (default: RESULTS/NAME/<UTC timestamp>, with RESULTS/NAME/latest pointing at it)")
	fs.StringVar(&f.results, "results", "results", "parent directory of timestamped outputs when --out is not given")
	fs.StringVar(&f.backends, "backends", "auto", "where backends run: process (in this process, on 127.0.0.1), docker (one container each), kube (one pod each in a namespace of the run's own; see --kubeconfig and --kube-*; never chosen by auto), external (instances already running: --backend or instances.external), or auto (external when --backend is given or the file lists instances.external, docker when it gives instances.app, else docker when a daemon answers, else process)")
	fs.BoolVar(&f.skipMissing, "skip-missing", false, "leave out the proxy strategies (nginx:, haproxy:, caddy:) whose proxy is not installed here, each noted as skipped in the summary, and run the rest; without it such a run stops before it starts, naming every proxy to install")
	fs.StringVar(&f.health, "health-path", "", "external instances without a sidecar: the path whose GET must answer (status below 500) before each strategy (default: instances.health, else /)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	fs.StringVar(&f.plotsURL, "plots-url", "", plotsURLUsage)
	fs.BoolVar(&f.raw, "raw", true, "keep raw data in each strategy's directory: every result in Vegeta's encoding, zstd-compressed (results.bin.zst: zstd -dc FILE | vegeta report), and an HdrHistogram log (latency.hlog); real engine only")
	fs.BoolVar(&f.force, "force", false, "with --out: write into a directory that is not empty, first removing a previous run's files there (only files lbchaos writes; anything else is kept)")
	fs.StringVar(&f.engine, "engine", "real", "real (real HTTP backends and load) or sim (the same model in virtual time: deterministic, seconds)")
	fs.IntVar(&f.gens, "generators", 0, "load generator processes sharing each strategy's load (default: the experiment's generators, else 1): request k goes to generator k mod N, all on one schedule; each runs its own balancers (replicas), so N generators are N independent client-side balancers; proxy strategies need 1")
	fs.StringVar(&f.token, "token", "", "the control token the run's backends require and its control calls send (Authorization: Bearer T): give the one external sidecars were started with (lbchaos serve --token or "+faultyserver.TokenEnv+"); default: $"+faultyserver.TokenEnv+", else a random one per run")
	fs.IntVar(&f.repeat, "repeat", 1, "run the experiment N times, with seeds SEED, SEED+1, ..., each into its own folder (OUT/rep-1, ...), and write the medians and ranges over them to OUT/repeats.json and repeats.md; expectations are checked on the medians, and lbchaos compare takes such a folder")
	fs.StringVar(&f.dnet, "docker-network", "auto", "how the harness reaches docker backends on 127.0.0.1: published (ports published by the engine; portable), host (containers share the host's network namespace; no userland proxy), or auto (host for a local Linux engine, else published)")
	f.kube.bind(fs)
	f.cal.bind(fs)
	f.metrics.bind(fs)
	fs.Var(urlList{&f.ext.backends}, "backend", "the base URL of an instance that already runs, e.g. http://10.0.0.5:8080 (repeat, one per instance, in id order); implies --backends external. Given N times, the run has N instances whatever the file's count (a note says so), and a fault on an instance beyond them is not applied (a warning names each)")
	fs.Var(urlList{&f.ext.sidecars}, "sidecar", "with --backend: the base URL of the lbchaos sidecar in front of each instance (repeat, one per --backend, in order, or none); faults act through it and load goes to it")
	return f
}

// cmdRun runs one experiment (or --repeat N of it), writes its reports
// and prints its table. Its exit status is 2 for bad usage, 3 when
// expectations failed, 4 when an abort condition of the file tripped, 130
// when interrupted, else 1 on error.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run")
	f := bindRun(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		return &exitError{2, errors.New("run: which experiment? Give a shipped one's name (lbchaos list) or a .yaml file, e.g. lbchaos run fast-fail; lbchaos help run lists the flags")}
	case 1:
	default:
		return &exitError{2, fmt.Errorf("run takes one experiment name or file, got %d (%s)", len(pos), strings.Join(pos, " "))}
	}
	exp, err := loadExperiment(pos[0])
	if err != nil {
		return err
	}
	ov, err := f.overrides(fs)
	if err != nil {
		return err
	}
	fileCount := exp.Instances.Count
	if exp, err = exp.Apply(ov); err != nil {
		return &exitError{2, err}
	}
	if err := checkInstances(stderr, exp, fileCount, f.engine); err != nil {
		return err
	}
	ownSidecars(ctx, exp, cmp.Or(f.token, os.Getenv(faultyserver.TokenEnv)), stderr)
	for _, w := range exp.Warnings {
		fmt.Fprintln(stderr, "lbchaos: warning:", w)
	}
	logw, progress := f.logging(stderr)
	dir, latest, err := f.outDir(exp.Name)
	if err != nil {
		return err
	}
	advisory := ov.Duration != 0 || ov.Rate != 0
	if f.repeat > 1 {
		return runRepeated(ctx, args, exp, f.repeat, dir, latest, advisory, stdout, stderr)
	}
	stopMetrics, err := f.metrics.start(exp, logw)
	if err != nil {
		return err
	}
	defer stopMetrics()
	eng, release, err := f.newEngine(ctx, fs, exp, dir, logw)
	if err != nil {
		return err
	}
	// Deferred, so containers and namespaces go on success, error,
	// interrupt and panic.
	defer release()
	opts := harness.Options{Engine: eng, Log: logw, Progress: progress, Advisory: advisory, Ready: f.ready(exp, dir, logw)}
	sum, runErr := harness.Run(ctx, exp, opts)
	if sum == nil {
		return runErr
	}
	f.cal.record(sum)
	if err := writeRun(exp, sum, dir, latest, f.plotsURL, stderr); err != nil {
		return errors.Join(runErr, err)
	}
	if err := printRun(stdout, sum, dir); err != nil {
		return err
	}
	return runExit(runErr, dir)
}

// checkValues returns an error for every value flag given out of range,
// each naming its flag: a flag given must be valid, and 0 does not mean
// "the experiment's".
func (f *runFlags) checkValues(fs *flag.FlagSet) (bad []error) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "duration":
			if f.duration <= 0 {
				bad = append(bad, fmt.Errorf("--duration: must be > 0, e.g. --duration 10s, got %v; leave it out to run for the experiment's duration", f.duration))
			}
		case "rate":
			if !(f.rate > 0) {
				bad = append(bad, fmt.Errorf("--rate: must be > 0 requests per second, e.g. --rate 500, got %v; leave it out to run at the experiment's rate", f.rate))
			}
		case "generators":
			if f.gens < 1 {
				bad = append(bad, fmt.Errorf("--generators: must be >= 1, got %d", f.gens))
			}
		}
	})
	if f.repeat < 1 {
		bad = append(bad, fmt.Errorf("--repeat: must be >= 1, got %d", f.repeat))
	}
	return bad
}

// overrides checks the flags and returns what they change in the
// experiment. Every bad flag is reported at once, each message naming its
// flag, with exit status 2.
func (f *runFlags) overrides(fs *flag.FlagSet) (experiments.Overrides, error) {
	var ov experiments.Overrides
	bad := f.checkValues(fs)
	ov.Duration, ov.Rate = f.duration, f.rate
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "seed":
			ov.Seed = &f.seed
		case "generators":
			ov.Generators = f.gens
		}
	})
	if f.strats != "" {
		for _, s := range splitStrategies(f.strats) {
			if s != "" {
				ov.Strategies = append(ov.Strategies, s)
			}
		}
	}
	var err error
	if ov.External, err = f.ext.overrides(f.backends, f.engine); err != nil {
		bad = append(bad, err)
	}
	if err := f.kube.check(f.backends); err != nil {
		bad = append(bad, err)
	}
	if err := f.metrics.check(fs, f.engine); err != nil {
		bad = append(bad, err)
	}
	switch f.engine {
	case "real":
	case "sim":
		if err := simIgnores(fs); err != nil {
			bad = append(bad, err)
		}
	default:
		bad = append(bad, fmt.Errorf("--engine: unknown value %q (real or sim)", f.engine))
	}
	if len(bad) > 0 {
		return ov, &exitError{2, errors.Join(bad...)}
	}
	ov.HealthPath = f.health
	return ov, nil
}

// logging returns where the run's log lines go and, unless --quiet, the
// progress callback that redraws a status line on stderr.
func (f *runFlags) logging(stderr io.Writer) (io.Writer, func(harness.Progress)) {
	if f.quiet {
		return io.Discard, nil
	}
	pp := newProgressPrinter(stderr)
	return pp, pp.update
}

// outDir returns the run's output directory: --out, else a new
// timestamped one under --results with latest, the link to point at it
// (empty with --out). It refuses a directory a run would mix with
// unless --force.
func (f *runFlags) outDir(name string) (dir, latest string, err error) {
	dir = f.out
	if dir == "" {
		stamp := time.Now().UTC().Format("20060102T150405Z")
		latest = filepath.Join(f.results, name, "latest")
		dir = filepath.Join(f.results, name, stamp)
	}
	if err := reports.CheckOutDir(dir); err != nil && !f.force {
		if errors.Is(err, reports.ErrOutNotEmpty) {
			return "", "", &exitError{2, fmt.Errorf("--out %s: the directory is not empty; a new run would mix with its files: choose a new or empty directory, or add --force to remove a previous run's files first", dir)}
		}
		return "", "", fmt.Errorf("--out %s: %w", dir, err)
	}
	return dir, latest, nil
}

// newEngine builds the --engine that measures exp, writing raw data
// into dir. release frees what its backends hold; it is never nil and is
// safe to defer.
func (f *runFlags) newEngine(ctx context.Context, fs *flag.FlagSet, exp *experiments.Experiment, dir string, logw io.Writer) (eng engine.Engine, release func(), err error) {
	switch f.engine {
	case "sim":
		cal, err := f.cal.load(fs)
		if err != nil {
			return nil, nil, &exitError{2, err}
		}
		return sim.Engine{Calibration: cal}, func() {}, nil
	case "real":
		return f.liveEngine(ctx, exp, dir, logw)
	}
	return nil, nil, &exitError{2, fmt.Errorf("--engine: unknown value %q (real or sim)", f.engine)}
}

// liveEngine builds the real engine and starts its backends' provider;
// on error it has released the provider already.
func (f *runFlags) liveEngine(ctx context.Context, exp *experiments.Experiment, dir string, logw io.Writer) (eng engine.Engine, release func(), err error) {
	if f.cal.path != "" {
		return nil, nil, &exitError{2, errors.New("--calibrate: only a simulation (--engine sim) is calibrated; --calibrate RUN_DIR takes the overhead of a real run")}
	}
	hostNet, err := hostNetwork(f.dnet)
	if err != nil {
		return nil, nil, &exitError{2, err}
	}
	// From the environment after parsing, not as the flag's default,
	// which the usage would print.
	tok := cmp.Or(f.token, os.Getenv(faultyserver.TokenEnv), faultyserver.NewToken())
	if err := faultyserver.CheckToken(tok); err != nil {
		return nil, nil, &exitError{2, fmt.Errorf("--token (or %s): %w", faultyserver.TokenEnv, err)}
	}
	provider, closeProvider, err := chooseProvider(ctx, f.backends, exp, dockerOptions(logw, hostNet), f.kube, tok)
	if err != nil {
		return nil, nil, err
	}
	built := false
	defer func() {
		if !built {
			closeProvider()
		}
	}()
	ropts := live.Options{Provider: provider, Metrics: f.metrics.exporter, SkipMissing: f.skipMissing, ProxyMissing: proxyMissing}
	if self, err := os.Executable(); err == nil {
		ropts.LbchaosBinary = self // for lbchaos:... proxy strategies
	}
	if f.raw {
		ropts.RawDir = dir
	}
	if kp, ok := provider.(*kube.Provider); ok {
		if ropts.Launcher, err = f.kube.launcher(kp, exp); err != nil {
			return nil, nil, &exitError{2, err}
		}
	}
	built = true
	return live.New(ropts), closeProvider, nil
}

// ready returns the callback that creates the output directory once the
// engine has accepted the experiment, so a run that cannot start leaves
// nothing behind; with --force it first clears a previous run's files.
func (f *runFlags) ready(exp *experiments.Experiment, dir string, logw io.Writer) func() error {
	return func() error {
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
}

// writeRun writes the run's reports and its experiment file into dir,
// then points latest (when not empty) at dir; a link that cannot be
// updated is reported on stderr, not returned.
func writeRun(exp *experiments.Experiment, sum *reports.Summary, dir, latest, plotsURL string, stderr io.Writer) error {
	if err := reports.WriteAllAt(dir, sum, plotsOrEnv(plotsURL)); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, reports.ExperimentFile), exp.Raw, 0o644); err != nil {
		return err
	}
	if latest != "" {
		if err := pointLatest(latest, filepath.Base(dir)); err != nil {
			fmt.Fprintf(stderr, "lbchaos: could not update %s: %v\n", latest, err)
		}
	}
	return nil
}

// printRun prints the run's table, its expectations and where its
// reports are.
func printRun(stdout io.Writer, sum *reports.Summary, dir string) error {
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
	return nil
}

// runExit maps the run's error to the command's: exit status 3 for
// failed expectations, 4 when an abort condition ended the run, 130 for
// an interrupt, 1 for any other error; each says where the results are.
func runExit(runErr error, dir string) error {
	var failed *harness.ExpectationsFailed
	var aborted *harness.Aborted
	switch {
	case runErr == nil:
		return nil
	case errors.As(runErr, &failed):
		return &exitError{3, fmt.Errorf("%w; results are in %s", runErr, dir)}
	case errors.As(runErr, &aborted):
		return &exitError{4, fmt.Errorf("%w; results are in %s", runErr, dir)}
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

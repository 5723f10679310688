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
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/kube"
	"github.com/lbchaos/lbchaos/harness/real"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return harness.Version
}

func cmdList(w io.Writer) error {
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

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lbchaos run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		duration = fs.Duration("duration", 0, "attack duration per strategy (default: the experiment's)")
		rate     = fs.Float64("rate", 0, "requests per second (default: the experiment's); with rate stages, their mean: every stage scales in proportion")
		seed     = fs.Uint64("seed", 0, "seed for every random choice (default: the experiment's)")
		strats   = fs.String("strategies", "", "comma-separated strategies to run instead of the experiment's, e.g. round-robin,p2c; a file strategy's path, as in nginx:file(path=upstream.conf), is relative to the current directory unless the experiment lists that strategy")
		out      = fs.String("out", "", "output directory (default: RESULTS/NAME/<UTC timestamp>, with RESULTS/NAME/latest pointing at it)")
		results  = fs.String("results", "results", "parent directory of timestamped outputs when --out is not given")
		backends = fs.String("backends", "auto", "where backends run: process (in this process, on 127.0.0.1), docker (one container each), kube (one pod each in a namespace of the run's own; see --kubeconfig and --kube-*; never chosen by auto), external (instances already running: --backend or instances.external), or auto (external when the file lists instances.external, docker when it gives instances.app, else docker when a daemon answers, else process)")
		health   = fs.String("health-path", "", "external instances without a sidecar: the path whose GET must answer (status below 500) before each strategy (default: instances.health, else /)")
		ext      externalFlags
		quiet    = fs.Bool("quiet", false, "no progress lines")
		raw      = fs.Bool("raw", true, "keep raw data in each strategy's directory: every result in Vegeta's encoding, zstd-compressed (results.bin.zst: zstd -dc FILE | vegeta report), and an HdrHistogram log (latency.hlog); real engine only")
		force    = fs.Bool("force", false, "with --out: write into a directory that is not empty, first removing a previous run's files there (only files lbchaos writes; anything else is kept)")
		engine   = fs.String("engine", "real", "real (real HTTP backends and load) or sim (the same model in virtual time: deterministic, seconds)")
		gens     = fs.Int("generators", 0, "load generator processes sharing each strategy's load (default: the experiment's generators, else 1): request k goes to generator k mod N, all on one schedule; each runs its own balancers (replicas), so N generators are N independent client-side balancers; proxy strategies need 1")
		token    = fs.String("token", "", "the control token the run's backends require and its control calls send (Authorization: Bearer T): give the one external sidecars were started with (lbchaos serve --token or "+faultyserver.TokenEnv+"); default: $"+faultyserver.TokenEnv+", else a random one per run")
		dnet     = fs.String("docker-network", "auto", "how the harness reaches docker backends on 127.0.0.1: published (ports published by the engine; portable), host (containers share the host's network namespace; no userland proxy), or auto (host for a local Linux engine, else published)")
	)
	var kf kubeFlags
	kf.bind(fs)
	fs.Var(urlList{&ext.backends}, "backend", "with --backends external: an instance's base URL, e.g. http://10.0.0.5:8080 (repeat, one per instance, in id order)")
	fs.Var(urlList{&ext.sidecars}, "sidecar", "with --backend: the base URL of the lbchaos sidecar in front of each instance (repeat, one per --backend, in order, or none); faults act through it and load goes to it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: lbchaos run NAME|FILE [flags]\n\nNAME is a shipped experiment (lbchaos list); FILE a path to your own .yaml.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := splitPositional(fs, args)
	if err != nil {
		return &exitError{2, err}
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{2, fmt.Errorf("run takes one experiment name or file, got %d (%s)", len(pos), strings.Join(pos, " "))}
	}
	exp, err := experiments.Load(pos[0])
	if err != nil {
		return err
	}
	var ov experiments.Overrides
	ov.Duration, ov.Rate = *duration, *rate
	var badGens bool
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "seed":
			ov.Seed = seed
		case "generators":
			badGens = *gens < 1
			ov.Generators = *gens
		}
	})
	if badGens {
		return &exitError{2, fmt.Errorf("--generators: must be >= 1, got %d", *gens)}
	}
	if *strats != "" {
		for _, s := range splitStrategies(*strats) {
			if s != "" {
				ov.Strategies = append(ov.Strategies, s)
			}
		}
	}
	if ov.External, err = ext.overrides(*backends, *engine); err != nil {
		return &exitError{2, err}
	}
	if err := kf.check(*backends); err != nil {
		return &exitError{2, err}
	}
	ov.HealthPath = *health
	if exp, err = exp.Apply(ov); err != nil {
		return &exitError{2, err}
	}
	var logw io.Writer = stderr
	var progress func(harness.Progress)
	if *quiet {
		logw = io.Discard
	} else {
		pp := newProgressPrinter(stderr)
		logw, progress = pp, pp.update
	}
	dir, latest := *out, ""
	if dir == "" {
		stamp := time.Now().UTC().Format("20060102T150405Z")
		latest = filepath.Join(*results, exp.Name, "latest")
		dir = filepath.Join(*results, exp.Name, stamp)
	}
	if err := reports.CheckOutDir(dir); err != nil && !*force {
		if errors.Is(err, reports.ErrOutNotEmpty) {
			return &exitError{2, fmt.Errorf("--out %s: the directory is not empty; a new run would mix with its files: choose a new or empty directory, or add --force to remove a previous run's files first", dir)}
		}
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	opts := harness.Options{Log: logw, Progress: progress, Advisory: ov.Duration != 0 || ov.Rate != 0}
	switch *engine {
	case "sim":
		opts.Engine = sim.Engine{}
	case "real":
		hostNet, err := hostNetwork(*dnet)
		if err != nil {
			return &exitError{2, err}
		}
		// From the environment after parsing, not as the flag's default,
		// which the usage would print.
		tok := cmp.Or(*token, os.Getenv(faultyserver.TokenEnv), faultyserver.NewToken())
		if err := faultyserver.CheckToken(tok); err != nil {
			return &exitError{2, fmt.Errorf("--token (or %s): %w", faultyserver.TokenEnv, err)}
		}
		provider, closeProvider, err := chooseProvider(ctx, *backends, exp, dockerOptions(logw, hostNet), kf, tok)
		if err != nil {
			return err
		}
		// Deferred, so containers and namespaces go on success, error,
		// interrupt and panic.
		defer closeProvider()
		ropts := real.Options{Provider: provider}
		if self, err := os.Executable(); err == nil {
			ropts.LbchaosBinary = self // for lbchaos:... proxy strategies
		}
		if *raw {
			ropts.RawDir = dir
		}
		if kp, ok := provider.(*kube.Provider); ok {
			if ropts.Launcher, err = kf.launcher(kp, exp); err != nil {
				return &exitError{2, err}
			}
		}
		opts.Engine = real.New(ropts)
	default:
		return &exitError{2, fmt.Errorf("--engine: unknown value %q (real or sim)", *engine)}
	}
	// The output directory is created once the engine has accepted the
	// experiment, so a run that cannot start leaves nothing behind.
	opts.Ready = func() error {
		if *force {
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
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, reports.MarkdownFile))
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

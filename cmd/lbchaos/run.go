package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
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
		rate     = fs.Float64("rate", 0, "requests per second (default: the experiment's)")
		seed     = fs.Uint64("seed", 0, "seed for every random choice (default: the experiment's)")
		strats   = fs.String("strategies", "", "comma-separated strategies to run instead of the experiment's, e.g. round-robin,p2c")
		out      = fs.String("out", "", "output directory (default: RESULTS/NAME/<UTC timestamp>, with RESULTS/NAME/latest pointing at it)")
		results  = fs.String("results", "results", "parent directory of timestamped outputs when --out is not given")
		backends = fs.String("backends", "auto", "where backends run: process (in this process, on 127.0.0.1), docker (one container each), or auto (docker when a daemon answers, else process)")
		quiet    = fs.Bool("quiet", false, "no progress lines")
		raw      = fs.Bool("raw", true, "keep raw data in the output directory: every result in Vegeta's encoding (results-*.bin, for vegeta report/plot) and HdrHistogram logs (latency-*.hlog); real engine only")
		engine   = fs.String("engine", "real", "real (real HTTP backends and load) or sim (the same model in virtual time: deterministic, seconds)")
		dnet     = fs.String("docker-network", "auto", "how the harness reaches docker backends on 127.0.0.1: published (ports published by the engine; portable), host (containers share the host's network namespace; no userland proxy), or auto (host for a local Linux engine, else published)")
	)
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
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			ov.Seed = seed
		}
	})
	if *strats != "" {
		for _, s := range splitStrategies(*strats) {
			if s != "" {
				ov.Strategies = append(ov.Strategies, s)
			}
		}
	}
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
	// Created once the run is known to be possible.
	dir, latest := *out, ""
	if dir == "" {
		stamp := time.Now().UTC().Format("20060102T150405Z")
		latest = filepath.Join(*results, exp.Name, "latest")
		dir = filepath.Join(*results, exp.Name, stamp)
	}
	var runExp func(context.Context) (*reports.Summary, error)
	switch *engine {
	case "sim":
		runExp = func(ctx context.Context) (*reports.Summary, error) {
			return harness.RunSim(ctx, exp, harness.SimOptions{Log: logw})
		}
	case "real":
		hostNet, err := hostNetwork(*dnet)
		if err != nil {
			return &exitError{2, err}
		}
		provider, closeProvider, err := chooseProvider(ctx, *backends, exp, dockerOptions(logw, hostNet))
		if err != nil {
			return err
		}
		// Deferred, so containers go on success, error, interrupt and panic.
		defer closeProvider()
		if err := harness.CheckProvider(exp, provider); err != nil {
			return err
		}
		runExp = func(ctx context.Context) (*reports.Summary, error) {
			opts := harness.Options{Provider: provider, Log: logw, Progress: progress}
			if self, err := os.Executable(); err == nil {
				opts.LbchaosBinary = self // for lbchaos:... proxy strategies
			}
			if *raw {
				opts.RawDir = dir
			}
			return harness.Run(ctx, exp, opts)
		}
	default:
		return &exitError{2, fmt.Errorf("--engine: unknown value %q (real or sim)", *engine)}
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}

	fmt.Fprintf(logw, "lbchaos: running %s (%s), seed %d, writing to %s\n", exp.Name, exp.Source, exp.Seed, dir)
	sum, runErr := runExp(ctx)
	if sum == nil {
		return runErr
	}
	sum.KeyMetric = exp.KeyMetric
	checked, failed := harness.CheckExpectations(exp, sum)
	sum.Expectations = checked
	// The file's expectations describe the file's load: with another
	// duration or rate they are shown but do not decide the exit status.
	advisory := ov.Duration != 0 || ov.Rate != 0
	if advisory && len(checked) > 0 {
		sum.Notes = append(sum.Notes, "The expectations were written for the experiment file's duration and rate; this run overrode them, so they are advisory.")
	}
	if err := reports.WriteAll(dir, sum); err != nil {
		return errors.Join(runErr, fmt.Errorf("write report: %w", err))
	}
	if err := os.WriteFile(filepath.Join(dir, "experiment.yaml"), exp.Raw, 0o644); err != nil {
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
	if len(checked) > 0 {
		fmt.Fprintln(stdout)
		if err := reports.WriteExpectations(stdout, checked); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, reports.MarkdownFile))
	if runErr != nil {
		if errors.Is(runErr, harness.ErrInterrupted) {
			return &exitError{130, fmt.Errorf("%w; the partial results are in %s", runErr, dir)}
		}
		return fmt.Errorf("%w; results measured so far are in %s", runErr, dir)
	}
	if failed > 0 && !advisory {
		return &exitError{3, fmt.Errorf("%d of %d expectations failed; results are in %s", failed, len(checked), dir)}
	}
	return nil
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

// chooseProvider resolves --backends. The returned func releases what the
// provider holds (containers, networks) and is safe to defer.
func chooseProvider(ctx context.Context, choice string, exp *experiments.Experiment, dopts harness.DockerOptions) (harness.Provider, func(), error) {
	logw := dopts.Log
	nop := func() {}
	switch choice {
	case "process":
		return harness.ProcessProvider{}, nop, nil
	case "docker":
		p, err := harness.NewDockerProvider(ctx, dopts)
		if err != nil {
			return nil, nop, fmt.Errorf("--backends docker: %w", err)
		}
		return p, closer(p, logw), nil
	case "auto":
		pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := harness.DockerAvailable(pingCtx)
		cancel()
		if err != nil {
			if exp.NeedsContainers() {
				return nil, nop, fmt.Errorf("%s acts on containers, and %w", exp.Name, err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: process (%v)\n", err)
			return harness.ProcessProvider{}, nop, nil
		}
		p, err := harness.NewDockerProvider(ctx, dopts)
		if err != nil {
			if exp.NeedsContainers() {
				return nil, nop, fmt.Errorf("--backends auto: %w", err)
			}
			fmt.Fprintf(logw, "lbchaos: backends: process (Docker answered, but: %v)\n", err)
			return harness.ProcessProvider{}, nop, nil
		}
		fmt.Fprintf(logw, "lbchaos: backends: docker (%s network)\n", map[bool]string{true: "host", false: "published-port"}[dopts.HostNetwork])
		return p, closer(p, logw), nil
	default:
		return nil, nop, &exitError{2, fmt.Errorf("--backends: unknown value %q (process, docker or auto)", choice)}
	}
}

func closer(p *harness.DockerProvider, logw io.Writer) func() {
	return func() {
		// A fresh context: the run's own may be cancelled by Ctrl-C.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			fmt.Fprintf(logw, "lbchaos: removing containers of run %s: %v\n", p.RunID(), err)
		}
	}
}

// dockerOptions: containers are reused across strategies, reset to their
// initial state through the control API and the Docker API (about 10 ms for
// ten instances, against about 2 s to start ten new ones).
func dockerOptions(logw io.Writer, hostNetwork bool) harness.DockerOptions {
	return harness.DockerOptions{Log: logw, Reuse: true, HostNetwork: hostNetwork}
}

// hostNetwork resolves --docker-network. The engine's port publishing on
// Linux goes through the userland docker-proxy, which costs milliseconds
// at p50 under load (README, performance); a local Linux engine can run the
// containers in the host's network namespace instead. A remote engine
// (DOCKER_HOST over TCP or SSH) or a VM-backed one elsewhere cannot.
func hostNetwork(choice string) (bool, error) {
	switch choice {
	case "host":
		return true, nil
	case "published":
		return false, nil
	case "auto":
		h := os.Getenv("DOCKER_HOST")
		return runtime.GOOS == "linux" && (h == "" || strings.HasPrefix(h, "unix://")), nil
	default:
		return false, fmt.Errorf("--docker-network: unknown value %q (auto, host or published)", choice)
	}
}

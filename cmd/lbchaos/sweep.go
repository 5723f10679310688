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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/harness/sweep"
	"github.com/lbchaos/lbchaos/reports"
)

// sweepFlags are lbchaos sweep's flags.
type sweepFlags struct {
	varies   []string
	repeat   int
	slo      string
	strats   string
	out      string
	results  string
	resume   string
	parallel int
	engine   string
	confirm  int
	points   string
	quiet    bool
}

func bindSweep(fs *flag.FlagSet) *sweepFlags {
	f := &sweepFlags{}
	fs.Var(urlList{&f.varies}, "vary", "a parameter and its values (repeat; the sweep runs their product): NAME=a,b,c or NAME=FROM..TO:N (N values, ends included), NAME one of "+sweep.SettingNames()+"; or a strategy with values in braces, 'least-inflight+eject(consecutive={1,3,5},duration={1s,5s})'")
	fs.IntVar(&f.repeat, "repeat", 0, "runs per point, with seeds SEED, SEED+1, ...: the figures are their medians, the spread their range (default: the sweep file's, else 1)")
	fs.StringVar(&f.slo, "slo", "", "the bound a sweep over rate finds each strategy's knee under, in the expectations' syntax: 'p99_ms < 100' (default: the sweep file's)")
	fs.StringVar(&f.strats, "strategies", "", "comma-separated strategies to run instead of the experiment's (without a strategy template)")
	fs.StringVar(&f.out, "out", "", "the sweep's folder (default: RESULTS/NAME/sweep-<UTC timestamp>)")
	fs.StringVar(&f.results, "results", "results", "parent directory of timestamped outputs when --out is not given")
	fs.StringVar(&f.resume, "resume", "", "the folder of an interrupted sweep: run only its points without a summary, with the same arguments (its experiment, --vary list, --repeat and --engine must match)")
	fs.IntVar(&f.parallel, "parallel", 0, "points run at once in the simulator (default: the number of CPUs); the real engine runs one at a time")
	fs.StringVar(&f.engine, "engine", "sim", "sim (every point in the simulator) or real (every point on process backends, one at a time)")
	fs.IntVar(&f.confirm, "confirm", 0, "after a simulated sweep, run the N best points (by the key metric) on process backends and set real beside predicted")
	fs.StringVar(&f.points, "confirm-points", "", "after a simulated sweep, run these points (comma-separated ids, as sweep.md numbers them) on process backends and set real beside predicted")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	return f
}

// cmdSweep is lbchaos sweep NAME|FILE: a sweep file (shipped or a path),
// or an experiment with --vary.
func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep")
	f := bindSweep(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &exitError{2, fmt.Errorf("sweep takes one sweep (lbchaos list sweeps) or experiment with --vary, got %d arguments", len(pos))}
	}
	cfg, err := f.config(pos[0])
	if err != nil {
		return &exitError{2, err}
	}
	for _, w := range cfg.Exp.Warnings {
		fmt.Fprintln(stderr, "lbchaos: warning:", w)
	}
	if !f.quiet {
		cfg.Log = stderr
	}
	fmt.Fprintf(stderr, "lbchaos: sweep of %s: %d points × %d run(s), %s engine, into %s\n", cfg.Exp.Name, cfg.Grid.Size(), cfg.Repeat, cfg.EngineName, cfg.Dir)
	begin := time.Now()
	res, runErr := sweep.Run(ctx, cfg)
	if res == nil {
		return sweepExit(runErr, cfg.Dir)
	}
	if ids, err := f.confirmIDs(res, cfg.Grid.Size()); err != nil {
		runErr = errors.Join(runErr, err)
	} else if runErr == nil && len(ids) > 0 {
		runErr = confirmSweep(ctx, cfg, res, ids, stderr)
	}
	fmt.Fprintf(stdout, "%s\n%d points in %.1f s: %s, %s, %s\n", sweep.Markdown(res), len(res.Points), time.Since(begin).Seconds(),
		filepath.Join(cfg.Dir, sweep.JSONFile), filepath.Join(cfg.Dir, sweep.CSVFile), filepath.Join(cfg.Dir, sweep.MarkdownFile))
	return sweepExit(runErr, cfg.Dir)
}

// sweepExit maps a sweep's error to the command's: exit status 130 for an
// interrupt (of the sweep or of its confirming runs), 1 for any other
// error.
func sweepExit(err error, dir string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, harness.ErrInterrupted) || errors.Is(err, context.Canceled):
		return &exitError{130, fmt.Errorf("%w; the results so far are in %s", err, dir)}
	}
	return err
}

// config builds the sweep's configuration from ref and the flags.
func (f *sweepFlags) config(ref string) (sweep.Config, error) {
	var c sweep.Config
	varies, slo, repeat := f.varies, f.slo, f.repeat
	expRef, strats := ref, f.strats
	if experiments.IsSweepRef(ref) {
		data, source, shipped, err := experiments.LoadSweep(ref)
		if err != nil {
			return c, err
		}
		file, err := sweep.ParseFile(source, data)
		if err != nil {
			return c, err
		}
		expRef = file.Experiment
		// A path in a sweep file on disk is relative to the file.
		isPath := strings.ContainsRune(expRef, '/') || strings.HasSuffix(expRef, ".yaml") || strings.HasSuffix(expRef, ".yml")
		if isPath && !filepath.IsAbs(expRef) && !shipped {
			expRef = filepath.Join(filepath.Dir(source), expRef)
		}
		varies = append(append([]string{}, file.Vary...), varies...)
		slo = cmp.Or(slo, file.SLO)
		if repeat == 0 {
			repeat = file.Repeat
		}
		if strats == "" {
			strats = strings.Join(file.Strategies, ",")
		}
	}
	exp, err := experiments.Load(expRef)
	if err != nil {
		return c, err
	}
	if len(varies) == 0 {
		return c, fmt.Errorf("%s is an experiment: give what to vary, e.g. --vary rate=1000..8000:8 (or run a sweep file: lbchaos list sweeps)", ref)
	}
	if strats != "" {
		if exp, err = exp.Apply(experiments.Overrides{Strategies: splitStrategies(strats)}); err != nil {
			return c, err
		}
	}
	grid, err := sweep.ParseGrid(varies)
	if err != nil {
		return c, err
	}
	if grid.Template != nil && strats != "" {
		return c, fmt.Errorf("--strategies: the strategy template %s is what each point runs; leave --strategies out", grid.Template.Text)
	}
	if _, err := f.pointIDs(grid.Size()); err != nil {
		return c, err
	}
	c = sweep.Config{Exp: exp, Grid: grid, Varies: varies, Repeat: max(1, repeat), Parallel: f.parallel}
	// Every point applies, before any folder is made.
	if _, err := grid.Check(exp, c.Repeat); err != nil {
		return c, err
	}
	if slo != "" {
		if c.Bound, err = sweep.ParseBound(slo); err != nil {
			return c, err
		}
	}
	switch f.engine {
	case "sim":
		c.EngineName, c.Engine = "sim", func() engine.Engine { return sim.Engine{} }
	case "real":
		if f.confirm > 0 || f.points != "" {
			return c, errors.New("--confirm: confirms a simulated sweep; with --engine real every point is real already")
		}
		c.EngineName, c.Engine, c.Parallel = "real", realEngine, 1
	default:
		return c, fmt.Errorf("--engine: want sim or real, got %q", f.engine)
	}
	switch {
	case f.confirm < 0:
		return c, fmt.Errorf("--confirm: must be >= 0, got %d", f.confirm)
	case f.parallel < 0:
		return c, fmt.Errorf("--parallel: must be >= 0, got %d", f.parallel)
	case f.repeat < 0:
		return c, fmt.Errorf("--repeat: must be >= 1, got %d", f.repeat)
	}
	c.Dir = f.out
	switch {
	case f.resume != "" && f.out != "" && f.out != f.resume:
		return c, errors.New("--resume DIR writes into DIR; leave --out out")
	case f.resume != "":
		if err := sweep.CheckResume(f.resume, c); err != nil {
			return c, err
		}
		c.Dir, c.Resume = f.resume, true
	case c.Dir == "":
		c.Dir = filepath.Join(f.results, exp.Name, "sweep-"+time.Now().UTC().Format("20060102T150405Z"))
	default:
		if err := reports.CheckOutDir(c.Dir); err != nil {
			return c, fmt.Errorf("--out %s: %w", c.Dir, err)
		}
	}
	return c, nil
}

// realEngine is the real engine on process backends, for a sweep's
// points: one at a time, each with its own control token.
func realEngine() engine.Engine {
	ropts := live.Options{Provider: process.Provider{Token: faultyserver.NewToken()}}
	if self, err := os.Executable(); err == nil {
		ropts.LbchaosBinary = self
	}
	return live.New(ropts)
}

// pointIDs parses --confirm-points against a grid of size points.
func (f *sweepFlags) pointIDs(size int) ([]int, error) {
	var ids []int
	for _, s := range strings.Split(f.points, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.Atoi(s)
		if err != nil || id < 1 || id > size {
			return nil, fmt.Errorf("--confirm-points: %q is no point of the sweep (1 to %d)", s, size)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// confirmIDs are the points --confirm and --confirm-points name.
func (f *sweepFlags) confirmIDs(res *sweep.Result, size int) ([]int, error) {
	var ids []int
	if f.confirm > 0 {
		ids = sweep.Best(res, f.confirm)
	}
	named, err := f.pointIDs(size)
	for _, id := range named {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, err
}

// confirmSweep runs the points ids of a simulated sweep on process
// backends, once each, and sets their figures beside the predicted ones,
// rewriting the sweep's files after each: an interrupt keeps the points
// confirmed before it (its error wraps harness.ErrInterrupted). A run an
// abort condition stopped is confirmed with what it measured.
func confirmSweep(ctx context.Context, c sweep.Config, res *sweep.Result, ids []int, log io.Writer) error {
	points := c.Grid.Points()
	for _, id := range ids {
		p := points[id-1]
		if ctx.Err() != nil {
			return fmt.Errorf("confirming point %d (%s): %w", id, c.Grid.Label(p), harness.ErrInterrupted)
		}
		exp, err := c.Grid.Apply(c.Exp, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "lbchaos: confirming point %d (%s) on process backends\n", id, c.Grid.Label(p))
		s, err := harness.Run(ctx, exp, harness.Options{Engine: realEngine(), Advisory: true})
		if _, ok := errors.AsType[*harness.Aborted](err); ok && s != nil && !s.Partial {
			err = nil
		}
		switch {
		case err == nil && ctx.Err() != nil:
			err = harness.ErrInterrupted
		case err != nil && ctx.Err() != nil && !errors.Is(err, harness.ErrInterrupted):
			err = fmt.Errorf("%w: %w", harness.ErrInterrupted, err)
		}
		if err != nil {
			return fmt.Errorf("confirming point %d (%s): %w", id, c.Grid.Label(p), err)
		}
		if err := sweep.SetReal(c.Dir, res, id, s); err != nil {
			return err
		}
		if err := sweep.Rewrite(c.Dir, res); err != nil {
			return err
		}
	}
	return nil
}

package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
)

// Config is what a sweep runs.
type Config struct {
	Exp    *experiments.Experiment
	Grid   *Grid
	Varies []string // the --vary arguments as given, for sweep.json
	// Repeat runs each point this many times, with seeds Exp.Seed,
	// Exp.Seed+1, ... (a point that varies the seed keeps its own); the
	// figures are the medians, the spread their range. At least 1.
	Repeat int
	// Engine returns the engine a run measures with (a new one per run:
	// runs go in parallel); its name goes into sweep.json.
	Engine     func() engine.Engine
	EngineName string
	// Dir is the sweep's folder: point-NNN/rep-K/summary.json per run,
	// sweep.json, sweep.csv and sweep.md.
	Dir string
	// Resume keeps the runs whose summary.json is already in Dir and runs
	// only the others.
	Resume bool
	// Parallel runs this many at once; 0: the number of CPUs.
	Parallel int
	// Bound, when set, is the bound the knee of a sweep over the rate
	// keeps: the highest rate whose figure stays within it.
	Bound *Bound
	// Log receives one line per run done; nil discards them.
	Log io.Writer
}

// Run runs every point of c's grid (c.Repeat times each), in parallel, and
// writes the sweep's files into c.Dir: first before any run (partial),
// again after the first run and at the end. The grid is checked against
// the experiment first (Grid.Check): a bad one stops the sweep before
// c.Dir is made. A run that trips an abort condition of the experiment is
// done: its point is marked aborted. When ctx ends first, the runs done
// are kept and the files say the sweep is partial; the error wraps ctx's
// and harness.ErrInterrupted.
func Run(ctx context.Context, c Config) (*Result, error) {
	if c.Repeat < 1 {
		c.Repeat = 1
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	par := c.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	points := c.Grid.Points()
	exps, err := c.Grid.Check(c.Exp, c.Repeat)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	type job struct{ point, rep int }
	runs := make([][]*reports.Summary, len(points))
	for i := range runs {
		runs[i] = make([]*reports.Summary, c.Repeat)
	}
	var (
		mu      sync.Mutex
		firstEr error
		done    int
		jobs    = make(chan job)
		wg      sync.WaitGroup
	)
	total := len(points) * c.Repeat
	// snapshot is the sweep so far; mu held.
	snapshot := func() *Result {
		res := c.result(points, runs)
		res.Partial = done < total
		if c.Resume {
			keepReal(c.Dir, res)
		}
		return res
	}
	// An interrupted sweep always leaves a sweep.json: a resumed one has
	// its own already.
	if !c.Resume {
		if err := write(c.Dir, snapshot()); err != nil {
			return nil, err
		}
	}
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				s, reused, err := c.runOne(ctx, exps[j.point], points[j.point], j.rep)
				mu.Lock()
				if err != nil && firstEr == nil && ctx.Err() == nil {
					firstEr = fmt.Errorf("point %d (%s), run %d: %w", points[j.point].ID, c.Grid.Label(points[j.point]), j.rep+1, err)
				}
				if s != nil {
					runs[j.point][j.rep] = s
					done++
					how := "ran"
					if reused {
						how = "kept"
					} else if s.Abort != nil {
						how = "ran (aborted: " + s.Abort.Text() + ")"
					}
					fmt.Fprintf(c.Log, "sweep: %d/%d %s point %d (%s) run %d\n", done, total, how, points[j.point].ID, c.Grid.Label(points[j.point]), j.rep+1)
					if done == 1 && done < total {
						if err := write(c.Dir, snapshot()); err != nil && firstEr == nil {
							firstEr = err
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range points {
		for r := range c.Repeat {
			mu.Lock()
			stop := firstEr != nil
			mu.Unlock()
			if stop {
				break feed
			}
			select {
			case jobs <- job{i, r}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	res := snapshot()
	if err := write(c.Dir, res); err != nil {
		return res, errors.Join(firstEr, err)
	}
	if firstEr != nil {
		return res, firstEr
	}
	if res.Partial {
		return res, errors.Join(ctx.Err(), fmt.Errorf("sweep: %w: %d of %d runs done; --resume %s runs the rest", harness.ErrInterrupted, done, total, c.Dir))
	}
	return res, nil
}

// runDir is run rep's folder of point p.
func runDir(dir string, p Point, rep int) string {
	return filepath.Join(dir, p.Dir(), fmt.Sprintf("rep-%d", rep+1))
}

// runOne runs point p's repetition rep (or, resuming, reads it back) and
// writes its summary.json.
func (c Config) runOne(ctx context.Context, exp *experiments.Experiment, p Point, rep int) (s *reports.Summary, reused bool, err error) {
	dir := runDir(c.Dir, p, rep)
	file := filepath.Join(dir, reports.SummaryFile)
	if c.Resume {
		if f, err := os.Open(file); err == nil {
			s, err := reports.ReadJSON(f)
			f.Close()
			if err == nil && !s.Partial {
				return s, true, nil
			}
		}
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	if rep > 0 && !c.Grid.varies("seed") {
		cp := *exp
		cp.Seed += uint64(rep)
		exp = &cp
	}
	s, err = harness.Run(ctx, exp, harness.Options{Engine: c.Engine(), Advisory: true})
	// An abort condition that tripped ends the run, not the sweep: the
	// summary says what tripped and the point fails the bound.
	if _, ok := errors.AsType[*harness.Aborted](err); ok && s != nil && !s.Partial {
		err = nil
	}
	if err != nil || s == nil || s.Partial {
		if err == nil {
			err = ctx.Err()
		}
		return nil, false, err
	}
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, s); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	return s, false, reports.WriteFileAtomic(file, buf.Bytes(), 0o644)
}

// varies reports whether the grid varies setting name.
func (g *Grid) varies(name string) bool {
	for _, d := range g.Dims {
		if d.Name == name && !d.InTemplate {
			return true
		}
	}
	return false
}

// Bound is a bound on one metric, in the expectations' syntax:
// "p99_ms < 100".
type Bound struct {
	experiments.Expectation
}

// ParseBound parses "METRIC OP NUMBER", e.g. "p99_ms < 100" or
// "error_ratio < 1%".
func ParseBound(s string) (*Bound, error) {
	metric, cond, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok {
		return nil, fmt.Errorf("--slo %q: want METRIC OP NUMBER, e.g. 'p99_ms < 100'", s)
	}
	if _, ok := reports.LookupMetric(metric); !ok {
		return nil, fmt.Errorf("--slo %q: unknown metric %q (one of %s)", s, metric, strings.Join(reports.Metrics(), ", "))
	}
	op, v, err := experiments.ParseThreshold(metric, cond)
	if err != nil {
		return nil, fmt.Errorf("--slo %q: %w", s, err)
	}
	return &Bound{experiments.Expectation{Metric: metric, Op: op, Value: v}}, nil
}

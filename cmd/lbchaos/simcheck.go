package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

// simcheckFlags are the flags of lbchaos simcheck.
type simcheckFlags struct {
	pre  float64
	out  string
	fail bool
}

func bindSimcheck(fs *flag.FlagSet) *simcheckFlags {
	f := &simcheckFlags{}
	fs.Float64Var(&f.pre, "calibrate-pre", sim.DefaultPreShare, "the share of each request's overhead spent between the pick and the instance starting on it, from 0 to 1 (see lbchaos run --calibrate-pre)")
	fs.StringVar(&f.out, "out", "", "write each calibrated simulation's run (summary.json, report with sim vs real) to OUT/EXPERIMENT")
	fs.BoolVar(&f.fail, "fail-on-disagreement", false, "exit 3 when a calibrated figure misses the real one by more than 10% of it (0.5 percentage points for a share, whichever is larger)")
	return f
}

// cmdSimcheck sets each real run's key metric and faulty share beside a
// simulation calibrated from that run and an uncalibrated one, per
// strategy.
func cmdSimcheck(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlagSet("simcheck")
	f := bindSimcheck(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &exitError{2, errors.New("simcheck takes one or more real runs' directories")}
	}
	if !(f.pre >= 0 && f.pre <= 1) {
		return &exitError{2, fmt.Errorf("--calibrate-pre: must be from 0 to 1, got %v", f.pre)}
	}
	misses := 0
	for i, dir := range pos {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		n, err := simcheckRun(ctx, dir, f, stdout)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		misses += n
	}
	if f.fail && misses > 0 {
		return &exitError{3, fmt.Errorf("%d calibrated figures disagree with the real run", misses)}
	}
	return nil
}

// simcheckRun compares one real run with its simulations and returns how
// many calibrated figures disagree.
func simcheckRun(ctx context.Context, dir string, f *simcheckFlags, w io.Writer) (int, error) {
	cal, err := sim.LoadCalibration(dir)
	if err != nil {
		return 0, err
	}
	cal.PreShare = f.pre
	real := cal.Real
	if real.Engine != "real" {
		return 0, fmt.Errorf("engine %q: simcheck compares a real run (--engine real) with its simulation", real.Engine)
	}
	exp, err := simcheckExperiment(dir, real)
	if err != nil {
		return 0, err
	}
	runSim := func(e sim.Engine) (*reports.Summary, error) {
		sum, err := harness.Run(ctx, exp, harness.Options{Engine: e, Advisory: true})
		if sum == nil {
			return nil, err
		}
		var failed *harness.ExpectationsFailed
		if err != nil && !errors.As(err, &failed) {
			return nil, err
		}
		return sum, nil
	}
	plain, err := runSim(sim.Engine{})
	if err != nil {
		return 0, err
	}
	calSum, err := runSim(sim.Engine{Calibration: cal})
	if err != nil {
		return 0, err
	}
	calSum.CalibratedFrom = reports.NewCalibration(dir, cal.PreShare, real)
	if f.out != "" {
		out := filepath.Join(f.out, exp.Name)
		if err := os.MkdirAll(out, 0o755); err != nil {
			return 0, err
		}
		if err := reports.WriteAll(out, calSum); err != nil {
			return 0, err
		}
	}

	key, _ := reports.LookupMetric(reports.VerdictOf(real).Metric)
	share, _ := reports.LookupMetric("faulty_share")
	fmt.Fprintf(w, "%s: real run %s (backends %s, %s s at %s req/s, seed %d), calibrated with %.0f%% of the overhead before service\n",
		real.Experiment, dir, real.Backends, fmtFloat(real.DurationS), fmtFloat(real.TargetRate), real.Seed, 100*cal.PreShare)
	if len(real.HarnessSaturated) > 0 {
		fmt.Fprintf(w, "  warning: the real run's harness saturated for %d strategies: their real figures describe this machine's load, not the strategy\n", len(real.HarnessSaturated))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "strategy\tmetric\treal\tsim calibrated\tsim\tagrees\t")
	misses := 0
	for i := range real.Strategies {
		rs := &real.Strategies[i]
		cs, ps := findStrategy(calSum, rs.Name), findStrategy(plain, rs.Name)
		if cs == nil || ps == nil {
			fmt.Fprintf(tw, "%s\t(not simulated)\t\t\t\t\t\n", rs.Name)
			continue
		}
		for j, m := range []reports.Metric{key, share} {
			if j == 1 && m.Name == key.Name {
				break
			}
			rv, cv, pv := m.Value(rs), m.Value(cs), m.Value(ps)
			ok := reports.Agrees(cv, rv, m.Kind == reports.KindRatio)
			verdict := "yes"
			if !ok {
				verdict = "NO"
				misses++
			}
			name := rs.Name
			if j > 0 {
				name = ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", name, m.Head, m.Text(rv), m.Text(cv), m.Text(pv), verdict)
		}
	}
	return misses, tw.Flush()
}

// simcheckExperiment is the experiment the real run in dir ran, with its
// duration, rate, seed and the strategies it measured that the simulator
// runs.
func simcheckExperiment(dir string, real *reports.Summary) (*experiments.Experiment, error) {
	// The file as the run saved it, under its own name, which must match
	// the experiment's; else the shipped experiment of that name.
	var exp *experiments.Experiment
	data, err := os.ReadFile(filepath.Join(dir, reports.ExperimentFile))
	switch {
	case err == nil:
		exp, err = experiments.Parse(filepath.Join(dir, real.Experiment+".yaml"), data)
	case errors.Is(err, os.ErrNotExist):
		exp, err = experiments.Load(real.Experiment)
	}
	if err != nil {
		return nil, err
	}
	seed := real.Seed
	ov := experiments.Overrides{Seed: &seed}
	if d := time.Duration(real.DurationS * float64(time.Second)); d != exp.Duration {
		ov.Duration = d
	}
	for _, st := range real.Strategies {
		if (sim.Engine{}).Skip(exp, st.Name) == "" {
			ov.Strategies = append(ov.Strategies, st.Name)
		}
	}
	if len(ov.Strategies) == 0 {
		return nil, errors.New("none of the run's strategies is simulated")
	}
	exp, err = exp.Apply(ov)
	if err != nil {
		return nil, err
	}
	if math.Abs(exp.Rate-real.TargetRate) > 1e-6*real.TargetRate {
		if exp, err = exp.Apply(experiments.Overrides{Rate: real.TargetRate}); err != nil {
			return nil, err
		}
	}
	return exp, nil
}

func findStrategy(s *reports.Summary, name string) *reports.Strategy {
	for i := range s.Strategies {
		if s.Strategies[i].Name == name {
			return &s.Strategies[i]
		}
	}
	return nil
}

func fmtFloat(v float64) string { return fmt.Sprintf("%g", v) }

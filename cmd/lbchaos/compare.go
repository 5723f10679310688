package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lbchaos/lbchaos/reports"
)

// cmdCompare prints two runs' headline metrics side by side and, with
// --fail-on-regression, fails when the second is significantly worse than
// the first or lacks one of its strategies. A repeated run (lbchaos run
// --repeat N) compares by its medians and ranges; a single run is a
// repetition of one.
func cmdCompare(args []string, stdout io.Writer) error {
	fs := newFlagSet("compare")
	failOnReg := bindCompare(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return &exitError{2, fmt.Errorf("compare takes two run directories (or summary.json files), got %d", len(pos))}
	}
	var runs [2]*reports.Repeated
	var singles [2]*reports.Summary
	for i, arg := range pos {
		if runs[i], singles[i], err = loadRun(arg); err != nil {
			return err
		}
	}
	if singles[0] != nil && singles[1] != nil {
		err = reports.WriteComparison(stdout, singles[0], singles[1])
	} else {
		err = reports.WriteRepeatedComparison(stdout, runs[0], runs[1], reports.DefaultTolerance)
	}
	if err != nil {
		return err
	}
	if *failOnReg {
		fmt.Fprintln(stdout)
		n, missing, err := reports.WriteGate(stdout, runs[0], runs[1], reports.DefaultTolerance)
		if err != nil {
			return err
		}
		if n > 0 || missing > 0 {
			return &exitError{3, fmt.Errorf("%s: %d regressions and %d strategies missing in %s against %s", runs[1].Experiment, n, missing, pos[1], pos[0])}
		}
	}
	return nil
}

func bindCompare(fs *flag.FlagSet) *bool {
	return fs.Bool("fail-on-regression", false, "exit 3 when a strategy of RUN_A is missing from RUN_B, or is worse in RUN_B beyond the tolerance (ratios +1 pp and +20%, p99/p99.9 +5 ms and +20%, achieved rate -5%) and, for repeated runs, beyond the noise: "+reports.NoiseRule)
}

// loadSummary reads a run's summary.json from its directory, or the file
// itself when path names one.
func loadSummary(path string) (*reports.Summary, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, reports.SummaryFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := reports.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// cmdReport re-renders every artifact of a run (report.md, report.html,
// plots) from its saved summary.json, without running anything.
func cmdReport(args []string, stdout io.Writer) error {
	fs := newFlagSet("report")
	plotsURL := bindReport(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &exitError{2, fmt.Errorf("report takes one run directory, got %d", len(pos))}
	}
	dir := pos[0]
	s, err := loadSummary(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		dir = filepath.Dir(dir)
	}
	if err := reports.WriteAllAt(dir, s, plotsOrEnv(*plotsURL)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-rendered %s from %s\n", filepath.Join(dir, reports.MarkdownFile), reports.SummaryFile)
	return nil
}

// plotsURLUsage is the help of run's and report's --plots-url.
const plotsURLUsage = "the address the run's folder is published at (a CI artifact's or a Pages site's URL): report.md then embeds its plots from there, so it can be pasted into a pull request or a job summary; default $" + plotsURLEnv + ", else the plots are linked as files beside report.md"

// plotsURLEnv sets --plots-url for a CI job.
const plotsURLEnv = "LBCHAOS_PLOTS_URL"

func bindReport(fs *flag.FlagSet) *string {
	return fs.String("plots-url", "", plotsURLUsage)
}

// plotsOrEnv is the --plots-url given, else $LBCHAOS_PLOTS_URL.
func plotsOrEnv(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv(plotsURLEnv)
}

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
// --fail-on-regression, fails when the second is worse than the first.
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
	var runs [2]*reports.Summary
	for i, arg := range pos {
		s, err := loadSummary(arg)
		if err != nil {
			return err
		}
		runs[i] = s
	}
	if err := reports.WriteComparison(stdout, runs[0], runs[1]); err != nil {
		return err
	}
	if *failOnReg {
		fmt.Fprintln(stdout)
		n, err := reports.WriteRegressions(stdout, runs[0], runs[1], reports.DefaultTolerance)
		if err != nil {
			return err
		}
		if n > 0 {
			return &exitError{3, fmt.Errorf("%d regressions of %s against %s", n, pos[1], pos[0])}
		}
	}
	return nil
}

func bindCompare(fs *flag.FlagSet) *bool {
	return fs.Bool("fail-on-regression", false, "exit 3 when a strategy of RUN_B is worse than in RUN_A beyond the tolerance (ratios +1 pp and +20%, p99/p99.9 +5 ms and +20%, achieved rate -5%)")
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
	pos, err := parseArgs(newFlagSet("report"), args, stdout)
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
	if err := reports.WriteAll(dir, s); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-rendered %s from %s\n", filepath.Join(dir, reports.MarkdownFile), reports.SummaryFile)
	return nil
}

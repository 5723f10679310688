package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lbchaos/lbchaos/reports"
)

// cmdCompare prints two runs' headline metrics side by side.
func cmdCompare(args []string, stdout io.Writer) error {
	if len(args) != 2 {
		return &exitError{2, fmt.Errorf("compare takes two run directories (or summary.json files), got %d", len(args))}
	}
	var runs [2]*reports.Summary
	for i, arg := range args {
		s, err := loadSummary(arg)
		if err != nil {
			return err
		}
		runs[i] = s
	}
	return reports.WriteComparison(stdout, runs[0], runs[1])
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
	if len(args) != 1 {
		return &exitError{2, fmt.Errorf("report takes one run directory, got %d", len(args))}
	}
	dir := args[0]
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

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// repDir is repetition i's directory (from 1) under a repeated run's.
func repDir(i int) string { return "rep-" + strconv.Itoa(i) }

// runRepeated runs exp n times through cmdRun with args (the command line
// of lbchaos run), with seeds exp.Seed, exp.Seed+1, ..., repetition i
// writing into dir/rep-i; then it writes dir/repeats.json and
// dir/repeats.md, the metrics' medians and ranges, and points latest (when
// not empty) at dir. Expectations decide on the medians: a repetition whose
// own expectations fail does not end the series. Advisory is true when the
// command line overrode the file's duration or rate.
func runRepeated(ctx context.Context, args []string, exp *experiments.Experiment, n int, dir, latest string, advisory bool, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	var runs []*reports.Summary
	var dirs []string
	var stopErr error
	for i := 1; i <= n; i++ {
		seed := exp.Seed + uint64(i-1)
		out := filepath.Join(dir, repDir(i))
		fmt.Fprintf(stderr, "lbchaos: repetition %d of %d, seed %d\n", i, n, seed)
		repArgs := append(slices.Clone(args), "--seed", strconv.FormatUint(seed, 10), "--out", out, "--repeat", "1")
		err := cmdRun(ctx, repArgs, stdout, stderr)
		var ee *exitError
		if err != nil && !(errors.As(err, &ee) && ee.code == 3) {
			// Not a failed expectation: interrupted, or the run failed.
			// Whatever was measured is aggregated below.
			stopErr = fmt.Errorf("repetition %d (seed %d): %w", i, seed, err)
		}
		if s, lerr := loadSummary(out); lerr == nil {
			runs = append(runs, s)
			dirs = append(dirs, repDir(i))
		}
		if stopErr != nil {
			break
		}
	}
	if len(runs) == 0 {
		return stopErr
	}
	agg, err := reports.Aggregate(runs, dirs)
	if err != nil {
		return errors.Join(stopErr, err)
	}
	agg.Advisory = advisory
	if err := writeRepeated(dir, agg); err != nil {
		return errors.Join(stopErr, err)
	}
	if latest != "" {
		if err := pointLatest(latest, filepath.Base(dir)); err != nil {
			fmt.Fprintf(stderr, "lbchaos: could not update %s: %v\n", latest, err)
		}
	}
	fmt.Fprintf(stdout, "\n%d repetitions of %s, seeds %d..%d: medians and ranges in %s\n",
		len(runs), agg.Experiment, agg.Seeds[0], agg.Seeds[len(agg.Seeds)-1], filepath.Join(dir, reports.RepeatsMarkdownFile))
	if len(agg.Expectations) > 0 {
		fmt.Fprintln(stdout, "on the medians:")
		if err := reports.WriteExpectations(stdout, agg.Expectations); err != nil {
			return errors.Join(stopErr, err)
		}
	}
	if stopErr != nil {
		return stopErr
	}
	if failed := reports.FailedExpectations(agg.Expectations); failed > 0 && !advisory {
		return &exitError{3, fmt.Errorf("%d of %d expectations failed on the medians of %d repetitions; results are in %s", failed, len(agg.Expectations), len(runs), dir)}
	}
	return nil
}

// writeRepeated writes agg's repeats.json and repeats.md into dir.
func writeRepeated(dir string, agg *reports.Repeated) error {
	var js, md bytes.Buffer
	if err := reports.WriteRepeatedJSON(&js, agg); err != nil {
		return err
	}
	if err := reports.WriteRepeatedMarkdown(&md, agg); err != nil {
		return err
	}
	if err := reports.WriteFileAtomic(filepath.Join(dir, reports.RepeatsFile), js.Bytes(), 0o644); err != nil {
		return err
	}
	return reports.WriteFileAtomic(filepath.Join(dir, reports.RepeatsMarkdownFile), md.Bytes(), 0o644)
}

// loadRun reads a run for comparison: a repeated run's repeats.json (its
// directory or the file), else a single run's summary.json as one
// repetition. single is that summary, nil for a repeated run.
func loadRun(path string) (r *reports.Repeated, single *reports.Summary, err error) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, reports.RepeatsFile)
		if _, err := os.Stat(file); err != nil {
			file = ""
		}
	} else if filepath.Base(path) != reports.RepeatsFile {
		file = ""
	}
	if file == "" {
		s, err := loadSummary(path)
		if err != nil {
			return nil, nil, err
		}
		return reports.Single(s), s, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r, err = reports.ReadRepeatedJSON(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil, nil
}

// bindJUnit defines junit's flags.
func bindJUnit(fs *flag.FlagSet) (out, name *string) {
	out = fs.String("out", "", "write the XML to this file instead of standard output")
	name = fs.String("name", "lbchaos expectations", "the name attribute of <testsuites>")
	return out, name
}

// cmdJUnit writes the expectations of runs (single or repeated) as JUnit
// XML: one test suite per run, one test case per expectation.
func cmdJUnit(args []string, stdout io.Writer) error {
	fs := newFlagSet("junit")
	out, name := bindJUnit(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &exitError{2, errors.New("junit takes one or more run directories, got none (see lbchaos help junit)")}
	}
	var runs []reports.JUnitRun
	for _, p := range pos {
		r, single, err := loadRun(p)
		if err != nil {
			return err
		}
		jr := reports.JUnitRun{
			Suite:      fmt.Sprintf("%s (%s engine, %s backends)", r.Experiment, r.Engine, r.Backends),
			Experiment: r.Experiment,
			Results:    r.Expectations,
			Advisory:   r.Advisory,
		}
		if single != nil {
			jr.Results, jr.Advisory = single.Expectations, single.ExpectationsAdvisory
		} else {
			jr.Over = fmt.Sprintf("the median of %d repetitions", len(r.Seeds))
		}
		runs = append(runs, jr)
	}
	var buf bytes.Buffer
	if err := reports.WriteJUnit(&buf, reports.NewJUnit(*name, runs)); err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := reports.WriteFileAtomic(*out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

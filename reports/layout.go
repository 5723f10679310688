package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The layout of a run's directory:
//
//	DIR/summary.json, report.md, report.html, experiment.yaml
//	DIR/success.{png,svg}, percentiles.{png,svg}, share.{png,svg}   (whole run)
//	DIR/<strategy dir>/latency.{png,svg}, errors.*, rate.*, health.* (per strategy)
//	DIR/<strategy dir>/results.bin.zst, latency.hlog               (raw data, real engine)
//
// A strategy's directory is the slug of its name (Slug), made unique
// within the run by StrategyDirs.

// File names of a strategy's raw data, in its directory.
const (
	// ResultsFile holds every result in Vegeta's own (gob) encoding,
	// compressed with Zstandard: zstd -dc results.bin.zst | vegeta report.
	ResultsFile = "results.bin.zst"
	// HDRLogFile is the strategy's latency as an HdrHistogram log.
	HDRLogFile = "latency.hlog"
	// ExperimentFile is the experiment as run, at the top of a run's directory.
	ExperimentFile = "experiment.yaml"
)

// StrategyDirs returns the directory, relative to the run's, of each of
// the named strategies, in order: Slug of the name, and, when an earlier
// strategy's slug is the same (names that differ only in punctuation,
// such as "a+b" and "a(b)"), that slug with "-2", "-3", ... The writers of
// plots and of raw data both use it, so that they agree.
func StrategyDirs(names []string) []string {
	used := map[string]bool{}
	// Whole-run plots are files at the top; a directory of the same
	// name would not clash, but reserve them anyway to keep names apart.
	for _, n := range topPlots {
		used[n] = true
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = uniqueSlug(Slug(n), used)
	}
	return out
}

// topPlots are the base names of the whole-run plots (RenderPlots).
var topPlots = []string{"success", "percentiles", "share"}

// strategyPlots are the base names of a strategy's plots, in its directory.
var strategyPlots = []string{"latency", "errors", "rate", "health"}

// ErrOutNotEmpty is returned by CheckOutDir for a directory that holds
// files already.
var ErrOutNotEmpty = errors.New("directory is not empty")

// CheckOutDir returns nil when dir does not exist or is empty, and an
// error wrapping ErrOutNotEmpty that names dir and one of its entries
// otherwise.
func CheckOutDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w (%d entries, e.g. %s)", dir, ErrOutNotEmpty, len(ents), ents[0].Name())
}

// ClearRun removes from dir the files a run of lbchaos writes there, in
// this layout and in the earlier flat one, and nothing else: the top-level
// report files, the whole-run plots, and each subdirectory that holds only
// a strategy's files (plots, raw data, temporary files of an interrupted
// write). It returns the entries it kept; dir itself stays.
func ClearRun(dir string) (kept []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		switch {
		case !e.IsDir() && e.Type().IsRegular() && isRunFile(name):
			err = os.Remove(p)
		case e.IsDir() && isStrategyDir(p):
			err = os.RemoveAll(p)
		default:
			kept = append(kept, name)
			continue
		}
		if err != nil {
			return kept, err
		}
	}
	return kept, nil
}

// isRunFile reports whether a top-level name is one a run writes (the
// flat layout's per-strategy files included).
func isRunFile(name string) bool {
	switch name {
	case SummaryFile, MarkdownFile, HTMLFile, ExperimentFile:
		return true
	}
	if isTemp(name) {
		return true
	}
	ext := path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	switch ext {
	case ".png", ".svg":
		if slices.Contains(topPlots, base) {
			return true
		}
		kind, _, ok := strings.Cut(base, "-")
		return ok && slices.Contains(strategyPlots, kind)
	case ".bin":
		return strings.HasPrefix(base, "results-")
	case ".hlog":
		return strings.HasPrefix(base, "latency-")
	}
	return false
}

// isTemp reports whether name is a temporary file of an atomic write
// (CreateAtomic).
func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// isStrategyDir reports whether dir is not empty and holds only the
// regular files of a strategy's directory.
func isStrategyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !isStrategyFile(e.Name()) {
			return false
		}
	}
	return true
}

func isStrategyFile(name string) bool {
	if name == ResultsFile || name == HDRLogFile || isTemp(name) {
		return true
	}
	ext := path.Ext(name)
	return (ext == ".png" || ext == ".svg") && slices.Contains(strategyPlots, strings.TrimSuffix(name, ext))
}

package reports

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStrategyDirs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"plain", []string{"round-robin", "p2c"}, []string{"round-robin", "p2c"}},
		{"punctuation", []string{"least-inflight+eject(consecutive=5,duration=5s)", "nginx:least_conn"},
			[]string{"least-inflight-eject-consecutive-5-duration-5s", "nginx-least-conn"}},
		{"same slug", []string{"a+b", "a(b)", "a:b"}, []string{"a-b", "a-b-2", "a-b-3"}},
		{"whole-run plot names", []string{"share", "success"}, []string{"share-2", "success-2"}},
		{"nothing usable", []string{"+", "()"}, []string{"strategy", "strategy-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, StrategyDirs(tc.names)); d != "" {
				t.Errorf("StrategyDirs(%q) (-want +got):\n%s", tc.names, d)
			}
		})
	}
}

func TestCheckOutDir(t *testing.T) {
	dir := t.TempDir()
	if err := CheckOutDir(filepath.Join(dir, "new")); err != nil {
		t.Errorf("missing directory: %v", err)
	}
	if err := CheckOutDir(dir); err != nil {
		t.Errorf("empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := CheckOutDir(dir)
	if !errors.Is(err, ErrOutNotEmpty) {
		t.Fatalf("non-empty directory: got %v, want ErrOutNotEmpty", err)
	}
}

// TestClearRun: a run's files go, in this layout and the flat one; a file
// or directory of anyone else's stays.
func TestClearRun(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		"summary.json", "report.md", "report.html", "experiment.yaml", "share.png", "share.svg",
		"round-robin/latency.png", "round-robin/results.bin.zst", "round-robin/latency.hlog",
		"p2c/.latency.hlog.tmp-123",
		"results-p2c.bin", "latency-p2c.hlog", "latency-p2c.png", "errors-p2c.svg", // flat layout
		"notes.txt", "mine/latency.png", "mine/notes.txt", "latency", // not a run's
	} {
		write(f)
	}
	kept, err := ClearRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{"latency", "mine", "notes.txt"}
	if d := cmp.Diff(want, left); d != "" {
		t.Errorf("left in the directory (-want +got):\n%s", d)
	}
	slices.Sort(kept)
	if d := cmp.Diff(want, kept); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(dir, "mine", "latency.png")); err != nil {
		t.Errorf("a directory with a foreign file lost its files: %v", err)
	}
}

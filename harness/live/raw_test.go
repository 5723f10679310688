package live

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns
// it; it is unmounted when the test ends. The test is skipped where
// mounting is not allowed (not root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestRawDataStopsOnFullDisk: the output directory is a 64 KiB tmpfs of
// which another file (ballast) leaves 8 KiB free, which the raw results
// (compressed, about 10 bytes a result) fill within the first second or
// so, even when the generator falls behind (as under the race detector).
// The raw data stops there with a note saying when and why; its partial
// file is removed; the run and its summary cover the whole run. Then the
// ballast's owner frees its space, and summary.json is written whole.
func TestRawDataStopsOnFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("real load")
	}
	dir := smallDisk(t, 64<<10)
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 56<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := runtest.MustExperiment(t, "full-disk", `
duration: 3s
rate: 2000
timeout: 1s
instances: {count: 2, workers: 8, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`)
	sum, err := run(context.Background(), exp, Options{RawDir: dir})
	if err != nil {
		t.Fatalf("the run failed instead of its raw data: %v", err)
	}
	st := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, st)
	// Under the race detector this machine's generator may fall behind the
	// 6000 scheduled requests (the run says so); it must still go on to
	// the end, well past the raw data's stop.
	if st.Requests < 1500 || st.ElapsedS != 3 {
		t.Errorf("%d requests in %.1f s: the run did not go on to its end", st.Requests, st.ElapsedS)
	}
	var note string
	for _, n := range sum.Notes {
		if strings.Contains(n, "raw data stopped at") {
			note = n
		}
	}
	t.Logf("note: %s", note)
	m := regexp.MustCompile(`^round-robin: raw data stopped at ([0-9.]+) s: no space left on device; the partial round-robin/results.bin.zst was removed, and the summary covers the whole run\.$`).FindStringSubmatch(note)
	if m == nil {
		t.Fatalf("no note on the raw data that stopped, in %q", sum.Notes)
	}
	if at, _ := strconv.ParseFloat(m[1], 64); at <= 0 || at >= 3 {
		t.Errorf("raw data stopped at %v s, want inside the run", at)
	}
	if _, err := os.Stat(filepath.Join(dir, "round-robin", reports.ResultsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("round-robin/%s: %v; want it removed", reports.ResultsFile, err)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	werr := reports.WriteAll(dir, sum)
	t.Logf("WriteAll on the small disk: %v", werr)
	f, err := os.Open(filepath.Join(dir, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := reports.ReadJSON(f)
	if err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if got.Strategies[0].Requests != st.Requests {
		t.Errorf("summary.json: %d requests, want %d", got.Strategies[0].Requests, st.Requests)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*.tmp-*"))
	top, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	leftovers = append(leftovers, top...)
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// openResults opens the raw results of the strategy in directory sub of
// the run's directory dir, decompressed; it is closed when the test ends.
func openResults(t *testing.T, dir, sub string) io.Reader {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, sub, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zr.Close(); f.Close() })
	return zr
}

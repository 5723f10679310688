package reports

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// smallDisk mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends; the test is skipped where mounting is not allowed.
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

// TestWriteFileAtomicOnFullDisk: a write that runs out of space midway
// leaves the previous file whole, or no file where there was none, and no
// temporary file.
func TestWriteFileAtomicOnFullDisk(t *testing.T) {
	dir := smallDisk(t, 64<<10)
	old := []byte(`{"schema": "old"}` + "\n")
	big := bytes.Repeat([]byte("x"), 128<<10)
	path := filepath.Join(dir, SummaryFile)
	if err := WriteFileAtomic(path, old, 0o644); err != nil {
		t.Fatal(err)
	}

	err := WriteFileAtomic(path, big, 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 128 KiB on a 64 KiB disk: %v, want ENOSPC", err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, old) {
		t.Errorf("after the failed write: %q, %v; want the previous content", got, err)
	}
	fresh := filepath.Join(dir, MarkdownFile)
	if err := WriteFileAtomic(fresh, big, 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing a new file: %v, want ENOSPC", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed new file exists: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != SummaryFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %q, want only %s", names, SummaryFile)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode of the file: %v, %v", st.Mode(), err)
	}

	// Room again: the new content replaces the old whole.
	if err := WriteFileAtomic(path, big[:32<<10], 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); len(got) != 32<<10 {
		t.Errorf("after a write with room: %d bytes, want %d", len(got), 32<<10)
	}
}

// TestWriteAllOnFullDisk: WriteAll on a disk too small for the whole
// report still writes summary.json first, whole, and leaves every other
// file whole or absent.
func TestWriteAllOnFullDisk(t *testing.T) {
	s := sampleSummary()
	var want bytes.Buffer
	if err := WriteJSON(&want, s); err != nil {
		t.Fatal(err)
	}
	// Room for summary.json and 8 KiB more: not for the plots.
	dir := smallDisk(t, want.Len()+8<<10)
	err := WriteAll(dir, s)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteAll on a disk with room for the summary alone: %v, want ENOSPC", err)
	}
	t.Logf("WriteAll: %v", err)
	got, rerr := os.ReadFile(filepath.Join(dir, SummaryFile))
	if rerr != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("summary.json not written whole (%d of %d bytes): %v", len(got), want.Len(), rerr)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, HTMLFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("report.html exists after WriteAll failed before it: %v", err)
	}
}

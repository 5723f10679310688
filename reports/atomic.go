package reports

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so that path holds, at every
// instant, either its previous content (or nothing) or all of data: data
// goes to a temporary file in path's directory, which is synced and then
// renamed over path. A crash or a full disk mid-write leaves path as it
// was; the temporary file is removed on error.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// CreateAtomic opens a temporary file beside path, for content written
// piece by piece: Commit makes it path, Abort removes it.
func CreateAtomic(path string, perm os.FileMode) (*AtomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &AtomicFile{File: f, path: path}, nil
}

// AtomicFile is a file being written under a temporary name (see
// CreateAtomic).
type AtomicFile struct {
	*os.File
	path string
	done bool
}

// Commit syncs and closes the file and renames it to its path. On error
// the temporary file is removed and path is left as it was.
func (a *AtomicFile) Commit() error {
	if a.done {
		return fmt.Errorf("%s: already committed or aborted", a.path)
	}
	a.done = true
	err := a.Sync()
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.Name())
		return fmt.Errorf("write %s: %w", a.path, a.plain(err))
	}
	return nil
}

// plain strips the temporary file's name from err ("write
// .summary.json.tmp-123: no space left on device"): the caller names
// the file.
func (a *AtomicFile) plain(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == a.Name() {
		return pe.Err
	}
	return err
}

// Abort closes and removes the temporary file; path is left as it was.
// It does nothing after Commit or Abort.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.Close()
	os.Remove(a.Name())
}

// writeAtomic writes path through write, atomically (see WriteFileAtomic).
func writeAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	a, err := CreateAtomic(path, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(a); err != nil {
		a.Abort()
		return fmt.Errorf("write %s: %w", path, a.plain(err))
	}
	return a.Commit()
}

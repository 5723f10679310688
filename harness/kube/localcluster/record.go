package localcluster

import (
	"encoding/json"
	"errors"
	"os"
	"time"
)

// Record is what Up writes to the state directory before it changes the
// host, and updates as it starts each process: everything Down needs, even
// when Up failed half-way.
type Record struct {
	Version  string    `json:"version"`
	CacheDir string    `json:"cache_dir"`
	StateDir string    `json:"state_dir"`
	Started  time.Time `json:"started"`
	Before   HostState `json:"before"`
	Procs    []Proc    `json:"procs"`
}

func (r *Record) save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loadRecord returns nil, nil when there is no record.
func loadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	return &r, json.Unmarshal(b, &r)
}

func (r *Record) layout() Layout {
	return Layout{Version: r.Version, CacheDir: r.CacheDir, StateDir: r.StateDir}
}

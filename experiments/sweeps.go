package experiments

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// shippedSweeps holds the sweep files built into the binary: each names
// the experiment it varies (lbchaos sweep NAME).
//
//go:embed sweeps/*.yaml
var shippedSweeps embed.FS

// SweepNames returns the names of the shipped sweeps, sorted.
func SweepNames() []string {
	entries, err := fs.Glob(shippedSweeps, "sweeps/*.yaml")
	if err != nil {
		panic(err) // the pattern is constant
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(strings.TrimPrefix(e, "sweeps/"), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// IsSweepRef reports whether ref names a sweep: a shipped sweep's name,
// or a file whose first key is "experiment:".
func IsSweepRef(ref string) bool {
	if slices.Contains(SweepNames(), ref) {
		return true
	}
	if !strings.HasSuffix(ref, ".yaml") && !strings.HasSuffix(ref, ".yml") {
		return false
	}
	data, err := os.ReadFile(ref)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.HasPrefix(line, "experiment:")
	}
	return false
}

// LoadSweepFile returns a sweep file's bytes: a shipped sweep by name, or
// a file from disk; source names it for messages.
func LoadSweepFile(ref string) (data []byte, source string, err error) {
	if data, err := shippedSweeps.ReadFile("sweeps/" + ref + ".yaml"); err == nil {
		return data, "experiments/sweeps/" + ref + ".yaml", nil
	}
	if !strings.ContainsRune(ref, '/') && !strings.HasSuffix(ref, ".yaml") && !strings.HasSuffix(ref, ".yml") {
		return nil, "", fmt.Errorf("%w %q%s (shipped sweeps: %s; or give a path to a .yaml file)", ErrUnknown, ref, didYouMean(ref, SweepNames()), strings.Join(SweepNames(), ", "))
	}
	data, err = os.ReadFile(ref)
	return data, ref, err
}

package experiments

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
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
// or a .yaml file whose first key is experiment.
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
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return false
	}
	m := doc.Content[0]
	return m.Kind == yaml.MappingNode && len(m.Content) > 0 && m.Content[0].Value == "experiment"
}

// LoadSweepFile returns a sweep file's bytes: a shipped sweep by name, or
// a file from disk; source names it for messages.
func LoadSweepFile(ref string) (data []byte, source string, err error) {
	data, source, _, err = LoadSweep(ref)
	return data, source, err
}

// LoadSweep is LoadSweepFile, and says whether the sweep is a shipped one
// (whose experiment is a shipped name, not a path next to the file).
func LoadSweep(ref string) (data []byte, source string, shipped bool, err error) {
	if data, err := shippedSweeps.ReadFile("sweeps/" + ref + ".yaml"); err == nil {
		return data, "experiments/sweeps/" + ref + ".yaml", true, nil
	}
	if !strings.ContainsRune(ref, '/') && !strings.HasSuffix(ref, ".yaml") && !strings.HasSuffix(ref, ".yml") {
		return nil, "", false, fmt.Errorf("%w %q%s (shipped sweeps: %s; or give a path to a .yaml file)", ErrUnknown, ref, didYouMean(ref, SweepNames()), strings.Join(SweepNames(), ", "))
	}
	data, err = os.ReadFile(ref)
	return data, ref, false, err
}

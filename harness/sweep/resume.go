package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CheckResume checks that dir holds a sweep that c resumes: its sweep.json
// names the same experiment, --vary list, repeat and engine. The error
// names every one that differs.
func CheckResume(dir string, c Config) error {
	data, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return fmt.Errorf("--resume %s: no %s there: not a sweep's folder", dir, JSONFile)
	}
	var old Result
	if err := json.Unmarshal(data, &old); err != nil {
		return fmt.Errorf("--resume %s: %s: %w", dir, JSONFile, err)
	}
	if old.Schema != Schema {
		return fmt.Errorf("--resume %s: %s has schema %q, not %q: not this version's sweep", dir, JSONFile, old.Schema, Schema)
	}
	var diffs []string
	if old.Experiment != c.Exp.Name {
		diffs = append(diffs, fmt.Sprintf("experiment %s, not %s", old.Experiment, c.Exp.Name))
	}
	trim := func(vs []string) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = strings.TrimSpace(v)
		}
		return out
	}
	if !slices.Equal(trim(old.Vary), trim(c.Varies)) {
		diffs = append(diffs, fmt.Sprintf("--vary %s, not %s", varyText(old.Vary), varyText(c.Varies)))
	}
	if repeat := max(1, c.Repeat); old.Repeat != repeat {
		diffs = append(diffs, fmt.Sprintf("--repeat %d, not %d", old.Repeat, repeat))
	}
	if old.Engine != c.EngineName {
		diffs = append(diffs, fmt.Sprintf("--engine %s, not %s", old.Engine, c.EngineName))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("--resume %s: that sweep ran with %s; resume it with its own arguments", dir, strings.Join(diffs, "; "))
	}
	return nil
}

// varyText is a --vary list for a message: each quoted, in order.
func varyText(vs []string) string {
	if len(vs) == 0 {
		return "(none)"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, " ")
}

package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is a sweep file: the experiment it varies and how.
//
//	experiment: slow-instance        # a shipped experiment or a path
//	description: one sentence
//	vary:                            # a list; quote a value with commas in [...]
//	  - rate=1000..8000:8
//	  - faults=on,off
//	slo: p99_ms < 300                # the knees' bound (optional)
//	repeat: 3                        # runs per point (optional, default 1)
//	strategies: [round-robin, p2c]   # instead of the experiment's (optional)
type File struct {
	Experiment  string   `yaml:"experiment"`
	Description string   `yaml:"description"`
	Vary        []string `yaml:"vary"`
	SLO         string   `yaml:"slo"`
	Repeat      int      `yaml:"repeat"`
	Strategies  []string `yaml:"strategies"`
}

// ParseFile reads a sweep file; source names it in errors.
func ParseFile(source string, data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	switch {
	case strings.TrimSpace(f.Experiment) == "":
		return nil, fmt.Errorf("%s: experiment: is required: the experiment the sweep varies, a shipped name or a path", source)
	case len(f.Vary) == 0:
		return nil, fmt.Errorf("%s: vary: is required: a list of NAME=VALUES or strategy templates, e.g. [rate=1000..8000:8]", source)
	case f.Repeat < 0:
		return nil, fmt.Errorf("%s: repeat: must be >= 1, got %d", source, f.Repeat)
	}
	for i, v := range f.Vary {
		if _, _, err := ParseVary(v); err != nil {
			return nil, fmt.Errorf("%s: vary[%d]: %w", source, i, err)
		}
	}
	if f.SLO != "" {
		if _, err := ParseBound(f.SLO); err != nil {
			return nil, fmt.Errorf("%s: slo: %w", source, err)
		}
	}
	return &f, nil
}

package experiments

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// shipped holds the experiment files built into the binary.
//
//go:embed *.yaml
var shipped embed.FS

// Names returns the names of the shipped experiments, sorted.
func Names() []string {
	entries, err := fs.Glob(shipped, "*.yaml")
	if err != nil {
		panic(err) // the pattern is constant
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e, ".yaml"))
	}
	slices.Sort(names)
	return names
}

// ErrUnknown is the error Load wraps for a name that is no shipped
// experiment: a usage error.
var ErrUnknown = errors.New("unknown experiment")

// Load returns a shipped experiment by name, or, when ref names a file
// (contains a path separator or ends in .yaml/.yml), that file from disk.
func Load(ref string) (*Experiment, error) {
	if strings.ContainsRune(ref, '/') || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml") {
		return LoadFile(ref)
	}
	data, err := shipped.ReadFile(ref + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("%w %q%s (shipped: %s; or give a path to a .yaml file)", ErrUnknown, ref, didYouMean(ref, Names()), strings.Join(Names(), ", "))
	}
	return parse("experiments/"+ref+".yaml", "", data)
}

// LoadFile reads and validates an experiment file from disk.
func LoadFile(path string) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates an experiment. source names the file in
// errors, and its directory is where relative paths in the file (a targets
// file, a proxy strategy's file) are resolved.
func Parse(source string, data []byte) (*Experiment, error) {
	dir, err := filepath.Abs(filepath.Dir(source))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return parse(source, dir, data)
}

// parse is Parse with the directory relative paths are resolved against;
// "" for a shipped experiment, which has none.
func parse(source, dir string, data []byte) (*Experiment, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty experiment file", source)
		}
		return nil, fmt.Errorf("%s: %s", source, withLine(yamlMessage(err, data), data))
	}
	if ps := checkStructure(&doc); len(ps) > 0 {
		return nil, fmt.Errorf("%s: %w", source, problemsError(ps))
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %s", source, withLine(yamlMessage(err, data), data))
	}
	e, err := f.build(source, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, located(err, &doc))
	}
	e.Raw = data
	return e, nil
}

var (
	notFound   = regexp.MustCompile(`field (\S+) not found in type \S+`)
	errorLine  = regexp.MustCompile(`^yaml: line (\d+): `)
	unquotedGT = regexp.MustCompile(`([A-Za-z_][\w.]*):[ \t]+(>=?[ \t]*[^,}\s]+)`)
)

// yamlMessage rewrites yaml.v3's decoding errors for people: one line per
// problem, "line N: unknown field "x"" instead of Go type names. A syntax
// error on a line (or just after one) holding an unquoted condition such as
// error_ratio: > 0.2, where YAML reads ">" as the start of a folded block,
// names the field and says to quote the condition.
func yamlMessage(err error, data []byte) string {
	if m := errorLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(data), "\n")
		for _, i := range []int{n, n - 1} {
			if i < 1 || i > len(lines) {
				continue
			}
			if c := unquotedGT.FindStringSubmatch(lines[i-1]); c != nil {
				return fmt.Sprintf("line %d: %s: the condition %s must be quoted, as in %s: \"%s\" (unquoted, YAML reads > as the start of a folded block)",
					i, c[1], c[2], c[1], c[2])
			}
		}
	}

	if m := errorLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(data), "\n")
		for _, i := range []int{n, n + 1} {
			if i >= 1 && i <= len(lines) && strings.Contains(lines[i-1], "\t") {
				return fmt.Sprintf("line %d: a tab; YAML indents with spaces only", i)
			}
		}
	}

	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = notFound.ReplaceAllString(m, `unknown field "$1"`)
		}
		return strings.Join(msgs, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

var yamlLinePrefix = regexp.MustCompile(`^line \d+: `)

// withLine gives msg, a YAML error of data, the line at fault when
// yaml.v3 left it out (it does for a problem on the first line and for
// some others, such as an unknown anchor): the first line at which a prefix
// of data fails with the same message.
func withLine(msg string, data []byte) string {
	if yamlLinePrefix.MatchString(msg) {
		return msg
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n := 1; n <= len(lines); n++ {
		var v any
		err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &v)
		if err != nil && yamlLinePrefix.ReplaceAllString(yamlMessage(err, data), "") == msg {
			return fmt.Sprintf("line %d: %s", n, msg)
		}
	}
	return msg
}

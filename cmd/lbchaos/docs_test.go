package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// The documentation cannot rot: TestDocs reads README.md, CONTRIBUTING.md
// and docs/*.md and
//
//   - runs every command of a fenced code block whose lines start with
//     lbchaos or make, unless the line before the block is a comment that
//     says why not: <!-- not run: REASON -->. An lbchaos run line is
//     simulated (--engine sim) through the command's own flags, experiment
//     loading and overrides, and its expectations must hold unless its
//     --duration or --rate makes them advisory; help, list, version and
//     completion lines run as they are. A make line runs as the lbchaos
//     command it stands for (make experiment NAME=x ENGINE=sim ARGS=...,
//     make list); other targets need the comment;
//   - checks that every experiment, strategy and metric the documents name
//     where only one can stand exists: lbchaos run NAME, make experiment
//     NAME=..., --strategies and --strategy values, make targets, the
//     strategies, key_metric and expect of YAML blocks and inline code, the
//     first column of tables headed experiment, strategy, base, wrapper or
//     metric;
//   - loads every YAML block that is a whole experiment file (it starts with
//     name:) and parses every other YAML block;
//   - checks that docs/experiments.md lists every shipped experiment,
//     that docs/getting-started.md's metric table is reports' metric table,
//     and that every relative link leads to a file (and heading) that exists.
//
// CONTRIBUTING.md describes the convention.

// docsRoot is the repository's top directory, from this package's.
const docsRoot = "../.."

// docFiles returns the documents TestDocs reads, relative to docsRoot.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	more, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(m, docsRoot+string(filepath.Separator))))
	}
	return files
}

// A fence is a fenced code block of a document.
type fence struct {
	file   string
	line   int    // of the opening fence, 1-based
	lang   string // the info string's first word: "yaml", "" ...
	body   []string
	notRun string // the reason of a <!-- not run: REASON --> before it
}

func (f fence) at(i int) string { return fmt.Sprintf("%s:%d", f.file, f.line+1+i) }

// A doc is one document, split into its fences and its prose lines
// (fences blanked out, so line numbers hold).
type doc struct {
	name   string
	fences []fence
	prose  []string
}

var notRunComment = regexp.MustCompile(`^<!--\s*not run:\s*(.*?)\s*-->$`)

func readDoc(t *testing.T, name string) doc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docsRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	d := doc{name: name}
	var cur *fence
	lastText := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if cur != nil {
			if strings.HasPrefix(trim, "```") && strings.Trim(trim, "`") == "" {
				d.fences = append(d.fences, *cur)
				cur = nil
			} else {
				cur.body = append(cur.body, line)
			}
			d.prose = append(d.prose, "")
			continue
		}
		if info, ok := strings.CutPrefix(trim, "```"); ok {
			cur = &fence{file: name, line: n, lang: strings.Fields(info + " x")[0]}
			if cur.lang == "x" {
				cur.lang = ""
			}
			if m := notRunComment.FindStringSubmatch(lastText); m != nil {
				cur.notRun = m[1]
				if m[1] == "" {
					t.Errorf("%s:%d: <!-- not run: --> without a reason: say why the block is not run", name, n-1)
				}
			}
			d.prose = append(d.prose, "")
			continue
		}
		d.prose = append(d.prose, line)
		if trim != "" {
			lastText = trim
		}
	}
	if cur != nil {
		t.Errorf("%s:%d: code block never closed", name, cur.line)
	}
	return d
}

func TestDocs(t *testing.T) {
	work := t.TempDir()
	var docs []doc
	for _, name := range docFiles(t) {
		docs = append(docs, readDoc(t, name))
	}
	// Whole experiment files first: a command may run one of them.
	for _, d := range docs {
		for _, f := range d.fences {
			if f.lang == "yaml" {
				checkYAMLBlock(t, f, work)
			}
		}
	}
	t.Chdir(work)
	for _, d := range docs {
		for _, f := range d.fences {
			checkCommandBlock(t, f)
		}
		checkProse(t, d)
	}
}

// checkCommandBlock checks the names on every command line of f and, unless
// f is marked not run, runs each.
func checkCommandBlock(t *testing.T, f fence) {
	t.Helper()
	if f.lang == "yaml" || f.lang == "json" {
		return
	}
	var cmds [][]string
	var lines []int
	isCommands := false
	for i, line := range joinContinued(f.body) {
		words, err := shellWords(line)
		if err != nil || len(words) == 0 {
			continue
		}
		if !isCommandWord(words[0]) {
			continue
		}
		isCommands = true
		checkNames(t, f.at(i), words)
		cmds = append(cmds, words)
		lines = append(lines, i)
	}
	if !isCommands || f.notRun != "" {
		return
	}
	for i, line := range joinContinued(f.body) {
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") {
			continue
		}
		words, err := shellWords(line)
		if err != nil || len(words) == 0 || !isCommandWord(words[0]) {
			t.Errorf("%s: %q is not an lbchaos or make command the test can run (%v): move it to another block, or mark the block <!-- not run: REASON -->", f.at(i), trim, err)
		}
	}
	for i, words := range cmds {
		if err := runDocCommandOnce(words); err != nil {
			t.Errorf("%s: %s: %v\n(mark the block <!-- not run: REASON --> if it cannot run here)", f.at(lines[i]), strings.Join(words, " "), err)
		}
	}
}

func isCommandWord(w string) bool {
	return w == "lbchaos" || w == "make" || w == "bin/lbchaos" || w == "./bin/lbchaos"
}

// joinContinued joins lines ending in a backslash with the next; the
// result keeps one entry per source line (continuations become "").
func joinContinued(lines []string) []string {
	out := make([]string, len(lines))
	for i := 0; i < len(lines); i++ {
		start, s := i, lines[i]
		for strings.HasSuffix(strings.TrimRight(s, " "), `\`) && i+1 < len(lines) {
			i++
			s = strings.TrimSuffix(strings.TrimRight(s, " "), `\`) + " " + lines[i]
		}
		out[start] = s
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the simple
// commands the documents show: quotes, backslashes and a trailing
// comment. Anything else a shell does (pipes, redirections, substitutions,
// variables) is an error: such a line is not a command this test runs.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '$' || line[i] == '`' {
					return nil, errors.New("a substitution")
				}
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, errors.New("unclosed quote")
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`*?[", c) >= 0:
			return nil, fmt.Errorf("shell syntax %q", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// lbchaosArgs returns the lbchaos arguments a command line stands for:
// its own for lbchaos, the equivalent for the make targets that have one.
func lbchaosArgs(words []string) ([]string, error) {
	if words[0] != "make" {
		return words[1:], nil
	}
	vars := map[string]string{}
	var targets []string
	for _, w := range words[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			vars[k] = v
		} else {
			targets = append(targets, w)
		}
	}
	switch {
	case slices.Equal(targets, []string{"list"}) && len(vars) == 0:
		return []string{"list"}, nil
	case slices.Equal(targets, []string{"experiment"}):
		args := []string{"run", vars["NAME"]}
		if e := vars["ENGINE"]; e != "" {
			args = append(args, "--engine", e)
		}
		extra, err := shellWords(vars["ARGS"])
		if err != nil {
			return nil, fmt.Errorf("ARGS: %w", err)
		}
		for k := range vars {
			if k != "NAME" && k != "ENGINE" && k != "ARGS" {
				return nil, fmt.Errorf("make experiment: %s= has no lbchaos equivalent here", k)
			}
		}
		return append(args, extra...), nil
	}
	return nil, fmt.Errorf("make %s has no lbchaos equivalent the test can run", strings.Join(words[1:], " "))
}

// docRuns are the outcomes of the command lines run so far, by their
// lbchaos arguments: the same line in several documents runs once.
var docRuns = map[string]error{}

func runDocCommandOnce(words []string) error {
	key := strings.Join(words, "\x00")
	if args, err := lbchaosArgs(words); err == nil {
		key = strings.Join(args, "\x00")
	}
	if err, done := docRuns[key]; done {
		return err
	}
	err := runDocCommand(words)
	docRuns[key] = err
	return err
}

// runDocCommand runs one command line of a document.
func runDocCommand(words []string) error {
	args, err := lbchaosArgs(words)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if len(args) == 0 {
		return errors.New("no command")
	}
	help := slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" || a == "-help" })
	switch {
	case help, slices.Contains([]string{"help", "list", "version", "--version", "-version", "completion", "validate"}, args[0]):
		var out, errOut bytes.Buffer
		if err := run(ctx, args, &out, &errOut); err != nil {
			return fmt.Errorf("%v\n%s", err, errOut.String())
		}
		if out.Len() == 0 {
			return errors.New("printed nothing")
		}
		return nil
	case args[0] == "run":
		return simulateRun(ctx, args[1:])
	}
	return fmt.Errorf("lbchaos %s is not a command this test runs", args[0])
}

// simulateRun takes an lbchaos run command line as cmdRun does (its flags,
// the experiment, the overrides) and simulates it, which is what --engine
// sim runs; it skips writing the reports, whose rendering other tests
// cover and which would take most of the time under the race detector.
func simulateRun(ctx context.Context, args []string) error {
	fs := newFlagSet("run")
	f := bindRun(fs)
	pos, err := parseArgs(fs, args, io.Discard)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("run takes one experiment, got %q", pos)
	}
	switch f.engine {
	case "real":
		if err := fs.Set("engine", "sim"); err != nil {
			return err
		}
	case "sim":
	default:
		return fmt.Errorf("--engine %s", f.engine)
	}
	exp, err := experiments.Load(pos[0])
	if err != nil {
		return err
	}
	ov, err := f.overrides(fs)
	if err != nil {
		return err
	}
	if exp, err = exp.Apply(ov); err != nil {
		return err
	}
	eng, release, err := f.newEngine(ctx, fs, exp, "", io.Discard)
	if err != nil {
		return err
	}
	defer release()
	_, err = harness.Run(ctx, exp, harness.Options{Engine: eng, Advisory: ov.Duration != 0 || ov.Rate != 0})
	return err
}

// placeholder reports whether a word stands for something the reader
// fills in: it holds a word in capitals (NAME, FILE, SPEC), <...>, ... or
// a|b alternatives.
func placeholder(w string) bool {
	if strings.ContainsAny(w, "<>|…") || strings.Contains(w, "...") || len(w) < 2 {
		return true
	}
	for _, word := range strings.FieldsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(word) >= 3 && strings.ToUpper(word) == word {
			return true
		}
	}
	return false
}

// checkNames checks the experiments, strategies and make targets a
// command line names.
func checkNames(t *testing.T, at string, words []string) {
	t.Helper()
	if words[0] == "make" {
		targets := makeTargets(t)
		for _, w := range words[1:] {
			if k, v, ok := strings.Cut(w, "="); ok {
				switch k {
				case "NAME":
					checkExperiment(t, at, v)
				case "ARGS", "RUN_ARGS":
					if more, err := shellWords(v); err == nil {
						checkFlags(t, at, more)
					}
				case "SCENARIOS", "EXPERIMENTS":
					for _, name := range strings.Fields(v) {
						checkExperiment(t, at, name)
					}
				}
				continue
			}
			if !slices.Contains(targets, w) {
				t.Errorf("%s: make %s: the Makefile has no target %q", at, w, w)
			}
		}
		return
	}
	args := words[1:]
	if len(args) >= 2 && args[0] == "run" {
		// The first word that is not a flag or a flag's value.
		if pos := firstOperand(args[1:]); pos != "" {
			checkExperiment(t, at, pos)
		}
	}
	checkFlags(t, at, args)
}

// firstOperand returns the first argument of a run command line that is
// not a flag or the value of one.
func firstOperand(args []string) string {
	boolFlags := map[string]bool{}
	fs := newFlagSet("run")
	bindRun(fs)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") || boolFlags[name] {
			continue
		}
		if fl := fs.Lookup(name); fl != nil {
			if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				continue
			}
		}
		i++ // its value
	}
	return ""
}

func checkFlags(t *testing.T, at string, args []string) {
	t.Helper()
	for i, a := range args {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "strategies" && name != "strategy") {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				continue
			}
			val = args[i+1]
		}
		for _, s := range splitStrategies(val) {
			checkSpec(t, at, s)
		}
	}
}

func checkExperiment(t *testing.T, at, name string) {
	t.Helper()
	if placeholder(name) || strings.ContainsRune(name, '/') || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		return
	}
	if !slices.Contains(experiments.Names(), name) {
		t.Errorf("%s: %q is no shipped experiment (lbchaos list: %s)", at, name, strings.Join(experiments.Names(), ", "))
	}
}

// checkSpec checks a strategy spec as an experiment file takes it.
func checkSpec(t *testing.T, at, spec string) {
	t.Helper()
	spec = strings.TrimSpace(spec)
	if placeholder(strings.ReplaceAll(spec, "|", "")) || strings.Contains(spec, "...") || strings.Contains(spec, "…") {
		return
	}
	var err error
	switch {
	case strategies.IsGRPC(spec):
		_, err = strategies.ParseGRPC(spec)
	case proxyspec.IsProxy(spec):
		_, err = proxyspec.Parse(spec)
	default:
		_, err = strategies.Parse(spec)
	}
	if err != nil {
		t.Errorf("%s: strategy %q: %v", at, spec, err)
	}
}

func checkMetric(t *testing.T, at, name string, key bool) {
	t.Helper()
	m, ok := reports.LookupMetric(name)
	switch {
	case !ok:
		t.Errorf("%s: %q is no metric (known: %s)", at, name, strings.Join(reports.Metrics(), ", "))
	case key && !m.Key:
		t.Errorf("%s: %q cannot be a key_metric (key metrics: %s)", at, name, strings.Join(reports.KeyMetrics(), ", "))
	}
}

var (
	makeTargetsOnce []string
	makeTarget      = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
)

func makeTargets(t *testing.T) []string {
	t.Helper()
	if makeTargetsOnce == nil {
		data, err := os.ReadFile(filepath.Join(repoRootAbs, "Makefile"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range makeTarget.FindAllStringSubmatch(string(data), -1) {
			makeTargetsOnce = append(makeTargetsOnce, m[1])
		}
	}
	return makeTargetsOnce
}

// repoRootAbs is docsRoot made absolute before the test changes directory.
var repoRootAbs = func() string {
	p, err := filepath.Abs(docsRoot)
	if err != nil {
		panic(err)
	}
	return p
}()

// checkYAMLBlock parses a YAML block, checks the names in it, and loads it
// when it is a whole experiment file, writing it into work as NAME.yaml.
func checkYAMLBlock(t *testing.T, f fence, work string) {
	t.Helper()
	src := strings.Join(f.body, "\n") + "\n"
	dec := yaml.NewDecoder(strings.NewReader(src))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("%s: YAML: %v", f.at(0), err)
			return
		}
		walkYAML(t, f, &n)
	}
	var head struct {
		Name string `yaml:"name"`
	}
	first := ""
	for _, l := range f.body {
		if tl := strings.TrimSpace(l); tl != "" && !strings.HasPrefix(tl, "#") {
			first = tl
			break
		}
	}
	if !strings.HasPrefix(first, "name:") {
		return
	}
	if err := yaml.Unmarshal([]byte(src), &head); err != nil || head.Name == "" {
		t.Errorf("%s: an experiment file without a name", f.at(0))
		return
	}
	path := filepath.Join(work, head.Name+".yaml")
	if old, err := os.ReadFile(path); err == nil && string(old) != src {
		t.Errorf("%s: a second, different experiment file named %s: give it a name of its own", f.at(0), head.Name)
		return
	}
	if _, err := experiments.Parse(path, []byte(src)); err != nil {
		t.Errorf("%s: %v", f.at(0), err)
		return
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// walkYAML checks strategies, key_metric and expect wherever they appear.
func walkYAML(t *testing.T, f fence, n *yaml.Node) {
	t.Helper()
	at := func(n *yaml.Node) string { return f.at(n.Line - 1) }
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkYAML(t, f, c)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "strategies":
				if v.Kind == yaml.SequenceNode {
					for _, s := range v.Content {
						if s.Kind == yaml.ScalarNode {
							checkSpec(t, at(s), s.Value)
						}
					}
				}
			case "key_metric":
				checkMetric(t, at(v), v.Value, true)
			case "expect":
				if v.Kind == yaml.SequenceNode {
					for _, x := range v.Content {
						checkExpectation(t, at(x), x)
					}
				}
			}
			walkYAML(t, f, v)
		}
	}
}

func checkExpectation(t *testing.T, at string, x *yaml.Node) {
	t.Helper()
	if x.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(x.Content); i += 2 {
		k, v := x.Content[i].Value, x.Content[i+1].Value
		if k == "strategy" {
			checkSpec(t, at, v)
		} else {
			checkMetric(t, at, k, false)
		}
	}
}

var (
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	tableRow   = regexp.MustCompile(`^\s*\|`)
	headingRe  = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	inlineKey  = regexp.MustCompile(`^key_metric:\s*(\S+)$`)
	inlineList = regexp.MustCompile(`^strategies:\s*\[(.*)\]$`)
)

// checkProse checks the inline code, the tables and the links of d.
func checkProse(t *testing.T, d doc) {
	t.Helper()
	var header []string
	for i, line := range d.prose {
		at := fmt.Sprintf("%s:%d", d.name, i+1)
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			checkInline(t, at, m[1])
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			checkLink(t, at, d.name, m[1])
		}
		if !tableRow.MatchString(line) {
			header = nil
			continue
		}
		cells := tableCells(line)
		if header == nil {
			header = cells
			continue
		}
		if len(cells) == 0 || strings.HasPrefix(cells[0], "---") || strings.HasPrefix(cells[0], ":--") {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			span := strings.ReplaceAll(m[1], `\|`, "|")
			// Words and header names beside the names: not names.
			if strings.ContainsRune(span, ' ') || strings.ContainsFunc(span, unicode.IsUpper) {
				continue
			}
			switch strings.ToLower(header[0]) {
			case "experiment":
				checkExperiment(t, at, span)
			case "strategy", "base":
				checkSpec(t, at, span)
			case "wrapper":
				if !slices.Contains(strategies.WrapperNames(), span) {
					t.Errorf("%s: %q is no wrapper (known: %s)", at, span, strings.Join(strategies.WrapperNames(), ", "))
				}
			case "metric":
				checkMetric(t, at, span, false)
			}
		}
	}
}

// checkInline checks an inline code span that states a command, a
// key_metric or a strategies list.
func checkInline(t *testing.T, at, span string) {
	t.Helper()
	if words, err := shellWords(span); err == nil && len(words) > 1 && isCommandWord(words[0]) {
		checkNames(t, at, words)
		return
	}
	if m := inlineKey.FindStringSubmatch(span); m != nil && !placeholder(m[1]) {
		checkMetric(t, at, m[1], true)
	}
	if m := inlineList.FindStringSubmatch(span); m != nil {
		for _, s := range splitStrategies(m[1]) {
			checkSpec(t, at, strings.Trim(s, `"' `))
		}
	}
	if strings.HasPrefix(span, "{strategy:") {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(span), &n); err == nil && len(n.Content) == 1 {
			checkExpectation(t, at, n.Content[0])
		}
	}
}

func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '|' {
			cur.WriteString(`\|`)
			i++
			continue
		}
		if line[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// checkLink checks that a relative link from doc leads to a file, and to a
// heading of it when it names one.
func checkLink(t *testing.T, at, from, link string) {
	t.Helper()
	if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
		return
	}
	path, anchor, _ := strings.Cut(link, "#")
	target := from
	if path != "" {
		target = filepath.ToSlash(filepath.Join(filepath.Dir(from), path))
	}
	full := filepath.Join(repoRootAbs, target)
	if _, err := os.Stat(full); err != nil {
		t.Errorf("%s: link %s: %s does not exist", at, link, target)
		return
	}
	if anchor == "" || !strings.HasSuffix(target, ".md") {
		return
	}
	if !slices.Contains(anchors(t, full), anchor) {
		t.Errorf("%s: link %s: %s has no heading #%s", at, link, target, anchor)
	}
}

var anchorCache = map[string][]string{}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) []string {
	t.Helper()
	if a, ok := anchorCache[path]; ok {
		return a
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]int{}
	inFence := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		m := headingRe.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		slug := slugify(m[1])
		if k := seen[slug]; k > 0 {
			out = append(out, fmt.Sprintf("%s-%d", slug, k))
		} else {
			out = append(out, slug)
		}
		seen[slug]++
	}
	anchorCache[path] = out
	return out
}

// slugify is GitHub's anchor of a heading: lower case, punctuation
// dropped, spaces as hyphens.
func slugify(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestDocsListEveryExperiment: docs/experiments.md has a row for every
// shipped experiment.
func TestDocsListEveryExperiment(t *testing.T) {
	d := readDoc(t, "docs/experiments.md")
	listed := map[string]bool{}
	for _, line := range d.prose {
		if cells := tableCells(line); tableRow.MatchString(line) && len(cells) > 1 {
			if m := codeSpan.FindStringSubmatch(cells[0]); m != nil {
				listed[m[1]] = true
			}
		}
	}
	for _, name := range experiments.Names() {
		if !listed[name] {
			t.Errorf("docs/experiments.md has no row for the shipped experiment %s", name)
		}
	}
}

// TestDocsMetricTable: docs/getting-started.md's table of metrics is
// reports' metric table: every metric, in its order, with its unit as an
// experiment file writes it and whether it can be a key_metric.
func TestDocsMetricTable(t *testing.T) {
	d := readDoc(t, "docs/getting-started.md")
	var rows [][]string
	inTable := false
	for _, line := range d.prose {
		if !tableRow.MatchString(line) {
			if inTable {
				break
			}
			continue
		}
		cells := tableCells(line)
		if !inTable {
			if strings.EqualFold(cells[0], "metric") {
				inTable = true
			}
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	var got, want []string
	for _, r := range rows {
		if len(r) < 3 {
			t.Errorf("metric table row %q: want metric | unit | key metric | ...", r)
			continue
		}
		got = append(got, strings.Join(r[:3], " | "))
	}
	for _, m := range reports.MetricTable() {
		key := "—"
		if m.Key {
			key = "yes"
		}
		want = append(want, fmt.Sprintf("`%s` | %s | %s", m.Name, fileUnit(m.Kind), key))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/getting-started.md's metric table (metric | unit | key metric) is\n%s\nreports.MetricTable gives\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// fileUnit is how an experiment file's expect writes a metric of the kind.
func fileUnit(k reports.Kind) string {
	switch k {
	case reports.KindRatio:
		return "ratio, 0 to 1"
	case reports.KindMilliseconds:
		return "ms"
	case reports.KindSeconds:
		return "s"
	case reports.KindCount:
		return "count"
	case reports.KindRate:
		return "req/s"
	case reports.KindFactor:
		return "factor (1 = even)" // or, for attempts per request, 1 = one attempt each
	}
	return k.String()
}

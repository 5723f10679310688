package experiments

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// fieldFirst matches what follows "SOURCE: " in a rejected file's error:
// the YAML line at fault, the path of the field at fault (rooted at a
// top-level field; a key below it is as the file spells it), or an empty
// file.
var fieldFirst = regexp.MustCompile(`^(line \d+:|empty experiment file$|(?P<top>[a-z][a-z0-9_]*)([.\[][^\n]*?)?(, [a-z][a-z0-9_.\[\]]*)*: )`)

// topFields are the experiment file's top-level fields.
var topFields = func() []string {
	var out []string
	t := reflect.TypeFor[file]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out = append(out, name)
	}
	return out
}()

// namesField reports whether msg, a rejected file's error after "SOURCE: ",
// starts with the line or the field at fault.
func namesField(msg string) bool {
	m := fieldFirst.FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	top := m[fieldFirst.SubexpIndex("top")]
	return top == "" || slices.Contains(topFields, top)
}

// FuzzParse reads experiment files. An accepted file must validate again,
// parse again to the same experiment, and hold only strategies their own
// parsers accept and expectations whose conditions read back; a rejected
// one must be named in the error, followed by the line or field at fault.
func FuzzParse(f *testing.F) {
	for _, name := range Names() {
		data, err := shipped.ReadFile(name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "name: x", "name: [", "strategies: [p2c]\nduration: 5",
		"name: t\nduration: 10s\nrate: 100\ninstances: {count: 3}\nstrategies: [p2c, round-robin]\nexpect:\n  - {strategy: p2c, error_ratio: \"< 0.01\"}\n",
		"name: t\nduration: 10s\nrate: 100\ninstances: {count: 3}\nstrategies: [p2c]\nfaults:\n  - {instance: 0, at: 1s, mode: fail}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	source := filepath.Join(dir, "fuzz.yaml")

	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse(source, data)
		if err != nil {
			msg, ok := strings.CutPrefix(err.Error(), source+": ")
			if !ok {
				t.Fatalf("Parse(%q): error %q does not start with the file's name", data, err)
			}
			if head, rest, many := strings.Cut(msg, " problems:\n"); many && strings.TrimLeft(head, "0123456789") == "" {
				for _, line := range strings.Split(rest, "\n") {
					if !namesField(strings.TrimSpace(line)) {
						t.Fatalf("Parse(%q): problem %q of %q names neither a line nor a field", data, line, msg)
					}
				}
				return
			}
			if !namesField(msg) {
				t.Fatalf("Parse(%q): error %q names neither a line nor a field", data, msg)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted a file that does not validate again: %v", data, err)
		}
		again, err := Parse(source, data)
		if err != nil {
			t.Fatalf("Parse(%q) accepted it once, then: %v", data, err)
		}
		if !reflect.DeepEqual(e, again) {
			t.Fatalf("Parse(%q) twice gave two experiments:\n%#v\n%#v", data, e, again)
		}
		for _, s := range slices.Concat(e.Strategies, hopsOf(e)) {
			var err error
			switch {
			case strings.Contains(s, Hop):
				continue // its hops are checked
			case proxyspec.IsProxy(s):
				_, err = proxyspec.Parse(s)
			case strategies.IsGRPC(s):
				_, err = strategies.ParseGRPC(s)
			default:
				_, err = strategies.Parse(s)
			}
			if err != nil {
				t.Fatalf("Parse(%q) accepted strategy %q, which its parser rejects: %v", data, s, err)
			}
		}
		for _, x := range e.Expect {
			cond := strings.TrimPrefix(x.String(), x.Metric+" ")
			op, v, ok := parseCondition(cond)
			if !ok || op != x.Op || v != x.Value {
				t.Fatalf("expectation %+v written as %q reads back as %q %v %v", x, cond, op, v, ok)
			}
			if _, known := reports.LookupMetric(x.Metric); !known {
				t.Fatalf("expectation %+v names an unknown metric", x)
			}
		}
	})
}

// maxFuzzedTargetsFile bounds a fuzzed targets file: the line search of
// parseTargets re-parses every prefix of a target's lines (quadratic in a
// target's length), which is fine for files people write. At 4 KiB an
// input of many short lines took over a second, and one still running when
// -fuzztime ran out failed a short CI run with "context deadline exceeded".
const maxFuzzedTargetsFile = 1 << 10

// FuzzTargets reads Vegeta targets files in both formats. An accepted file
// must give requests with a method and an absolute path that read back the
// same when written out again in the same format; a rejected one's error
// must name the file and the line at fault (or say there were no targets).
func FuzzTargets(f *testing.F) {
	for _, s := range []string{
		"GET /\n", "GET http://example.com/orders?id=1\nX-Key: a\n\nPOST /orders\nContent-Type: application/json\n@body.json\n",
		"# comment\n\nGET /a\nGET /b\n", "GET\n", "get /x\n", "GET /\nbad header\n", "GET /\n@missing.json\n",
		"PUT /a b\n", "GET /x y\nA: 1\nA: 2\n", "\n\n", "HEAD /%zz\n",
	} {
		f.Add([]byte(s), false)
	}
	for _, s := range []string{
		`{"method":"GET","url":"/"}`, `{"method":"POST","url":"http://h/orders","header":{"X-Key":["a","b"]},"body":"e30="}` + "\n\n",
		`{"method":"GET"}`, `{"url":"/"}`, `{"method":"GET","url":"/","body":"%%%"}`, `[1]`, "{}\n{}", `{"method":"GET","url":"no-slash"}`,
	} {
		f.Add([]byte(s), true)
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "body.json"), []byte(`{"id":1}`), 0o644); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "targets.txt")

	f.Fuzz(func(t *testing.T, data []byte, jsonFormat bool) {
		if len(data) > maxFuzzedTargetsFile {
			return
		}
		read := readTargets
		if jsonFormat {
			read = readJSONTargets
		} else {
			// Bodies are files: keep to the one in dir.
			for l := range strings.SplitSeq(string(data), "\n") {
				if t := strings.TrimSpace(l); strings.HasPrefix(t, "@") && t != "@body.json" {
					return
				}
			}
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		list, err := read(path)
		if err != nil {
			checkTargetsError(t, data, err)
			return
		}
		for _, r := range list {
			if r.Method == "" || !strings.HasPrefix(r.Path, "/") || r.Weight != 1 {
				t.Fatalf("targets %q: request %+v lacks a method or an absolute path", data, r)
			}
		}
		out := writeTargets(t, list, jsonFormat)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := read(path)
		if err != nil {
			t.Fatalf("targets %q read as %+v; written back as %q they do not read: %v", data, list, out, err)
		}
		if !reflect.DeepEqual(back, list) {
			t.Fatalf("targets %q read as %+v; written back as %q they read as %+v", data, list, out, back)
		}
	})
}

var targetsLine = regexp.MustCompile(`^targets\.txt line (\d+): `)

func checkTargetsError(t *testing.T, data []byte, err error) {
	t.Helper()
	msg := err.Error()
	if strings.HasPrefix(msg, "targets.txt: no targets") {
		return
	}
	m := targetsLine.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("targets %q: error %q names neither the file and line nor a lack of targets", data, msg)
	}
	n, _ := strconv.Atoi(m[1])
	if lines := strings.Count(string(data), "\n") + 1; n < 1 || n > lines {
		t.Fatalf("targets %q: error %q names line %d of %d", data, msg, n, lines)
	}
}

// writeTargets writes list in Vegeta's http or JSON format.
func writeTargets(t *testing.T, list []Request, jsonFormat bool) []byte {
	t.Helper()
	var b strings.Builder
	for _, r := range list {
		if jsonFormat {
			line, err := json.Marshal(map[string]any{
				"method": r.Method, "url": r.Path, "header": r.Header,
				"body": base64.StdEncoding.EncodeToString(r.Body),
			})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(r.Method + " " + r.Path + "\n")
		for k, vs := range r.Header {
			for _, v := range vs {
				b.WriteString(k + ": " + v + "\n")
			}
		}
		if len(r.Body) > 0 {
			b.WriteString("@body.json\n")
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// TestParseYAMLErrorsNameTheLine pins what fuzzing found: yaml.v3 leaves
// the line out of some errors (those on the first line, an unknown anchor,
// bad base64), so the message named neither a line nor a field.
func TestParseYAMLErrorsNameTheLine(t *testing.T) {
	for _, tt := range []struct{ data, want string }{
		{`"`, "line 1: found unexpected end of stream"},
		{"name: x\ndescription: 'open", "line 2: found unexpected end of stream"},
		{"name: b: c", "line 1: mapping values are not allowed in this context"},
		{"name: x\nseed: 1\ndescription: *nope\n", "line 3: unknown anchor 'nope' referenced"},
		{"\tname: x", "line 1: found character that cannot start any token"},
		{"name: x\nrate: [1,\n", "line 2: did not find expected node content"}, // yaml.v3's own line
	} {
		_, err := Parse("fuzz.yaml", []byte(tt.data))
		if err == nil || err.Error() != "fuzz.yaml: "+tt.want {
			t.Errorf("Parse(%q): err = %v, want fuzz.yaml: %s", tt.data, err, tt.want)
		}
	}
}

// TestTargetsNeedAnAbsolutePath pins what fuzzing found: a target URL
// such as "A:00" (a scheme and an opaque part) was read as a request for
// the path "00", in both formats.
func TestTargetsNeedAnAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, data string
		read       func(string) ([]Request, error)
	}{
		{"http", "GET /ok\n\nA A:00\n", readTargets},
		{"json", `{"method":"GET","url":"/ok"}` + "\n" + `{"method":"GET","url":"mailto:x"}` + "\n", readJSONTargets},
	} {
		path := filepath.Join(dir, tt.name+".txt")
		if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := tt.read(path)
		if want := tt.name + `.txt line 3: URL "A:00" has no absolute path`; tt.name == "http" && (err == nil || !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("%s: err = %v, want one starting %s", tt.name, err, want)
		}
		if want := tt.name + `.txt line 2: URL "mailto:x" has no absolute path`; tt.name == "json" && (err == nil || !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("%s: err = %v, want one starting %s", tt.name, err, want)
		}
	}
}

// TestParseErrorFieldPaths pins the field paths FuzzParse accepts as
// naming the field at fault, among them a key as the file spells it
// ("rate.A", which fuzzing produced).
func TestParseErrorFieldPaths(t *testing.T) {
	for msg, want := range map[string]bool{
		"line 3: mapping values are not allowed in this context":      true,
		"rate.A: line 1: unknown field (rate takes start and stages)": true,
		"faults[0].fault: mode: required":                             true,
		"instances.count: must be >= 1, got 0":                        true,
		"empty experiment file":                                       true,
		"found unexpected end of stream":                              false,
		"mode: required":                                              false,
		"unknown field \"x\"":                                         false,
	} {
		if got := namesField(msg); got != want {
			t.Errorf("namesField(%q) = %v, want %v", msg, got, want)
		}
	}
	_, err := Parse("fuzz.yaml", []byte("rate: {A}\ninstances: {count: 1}\nstrategies: [p2c]"))
	if err == nil || !namesField(strings.TrimPrefix(err.Error(), "fuzz.yaml: ")) {
		t.Errorf(`Parse("rate: {A}"): err = %v, want one naming rate.A`, err)
	}
}

// A target's header must have a token for a name and UTF-8 text for a
// value: a JSON name of invalid UTF-8 (which fuzzing produced) came back
// as U+FFFD when the file was written back, and no client sends either.
func TestTargetsHeadersMustBeValid(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, data, want string
		read             func(string) ([]Request, error)
	}{
		{"json-name", `{"method":"GET","url":"/ok"}` + "\n" + "{\"method\":\"A\",\"url\":\"/\",\"header\":{\"\xeb\":[]}}\n", `json-name.txt line 2: header name "\xeb"`, readJSONTargets},
		{"json-value", `{"method":"GET","url":"/","header":{"X-A":["a\u0001b"]}}` + "\n", `json-value.txt line 1: header X-A: value "a\x01b"`, readJSONTargets},
		{"http-name", "GET /ok\n\nGET /\nBad Name: x\n", `http-name.txt line 3: header name "Bad Name"`, readTargets},
	} {
		path := filepath.Join(dir, tt.name+".txt")
		if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := tt.read(path); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one starting %s", tt.name, err, tt.want)
		}
	}
}

// hopsOf lists the hops of e's tiered strategies (HopStrategies).
func hopsOf(e *Experiment) []string {
	var hops []string
	for _, s := range e.Strategies {
		if strings.Contains(s, Hop) {
			hops = append(hops, HopStrategies(s, len(e.Tiers))...)
		}
	}
	return hops
}

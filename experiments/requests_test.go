package experiments

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// requestsBase is an experiment without requests; each case appends its own.
const requestsBase = `name: my-case
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`

// writeCase writes the experiment and the given files into a directory
// of its own and loads the experiment from there.
func writeCase(t *testing.T, yaml string, files map[string]string) (*Experiment, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "my-case.yaml")
	if err := os.WriteFile(path, []byte(requestsBase+yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadFile(path)
}

func TestRequests(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		files map[string]string
		want  *Requests
	}{
		{
			name: "inline list with defaults and weights",
			yaml: `requests: {list: [{method: POST, path: /orders, headers: {Content-Type: application/json}, body: '{"a":1}', weight: 3}, {path: /health}]}`,
			want: &Requests{List: []Request{
				{Method: "POST", Path: "/orders", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":1}`), Weight: 3},
				{Method: "GET", Path: "/health", Weight: 1},
			}},
		},
		{
			name: "targets file: hosts dropped, headers kept, bodies relative to the file",
			yaml: "requests: {targets: load/targets.txt}",
			files: map[string]string{
				"load/targets.txt":       "# orders\nPOST http://example.com/orders?x=1\nContent-Type: application/json\nX-Trace: a\n@bodies/order.json\n\nGET /health\n",
				"load/bodies/order.json": `{"id":7}`,
			},
			want: &Requests{Targets: "load/targets.txt", Format: TargetsHTTP, List: []Request{
				{Method: "POST", Path: "/orders?x=1", Header: http.Header{"Content-Type": {"application/json"}, "X-Trace": {"a"}}, Body: []byte(`{"id":7}`), Weight: 1},
				{Method: "GET", Path: "/health", Header: http.Header{}, Weight: 1},
			}},
		},
		{
			name: "targets file in Vegeta's JSON format",
			yaml: "requests: {targets: targets.json, format: json}",
			files: map[string]string{
				"targets.json": `{"method": "POST", "url": "http://x/orders", "header": {"Content-Type": ["application/json"]}, "body": "eyJhIjoxfQ=="}` +
					"\n\n" + `{"method": "GET", "url": "/health"}`,
			},
			want: &Requests{Targets: "targets.json", Format: TargetsJSON, List: []Request{
				{Method: "POST", Path: "/orders", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":1}`), Weight: 1},
				{Method: "GET", Path: "/health", Header: http.Header{}, Weight: 1},
			}},
		},
		{
			name: "key from a header: numbers are keys, other values hashed",
			yaml: `requests: {key: {header: x-user}, list: [{path: /a, headers: {X-User: "42"}}, {path: /b, headers: {X-User: alice}}, {path: /health}]}`,
			want: &Requests{Key: &RequestKey{Header: "x-user"}, List: []Request{
				{Method: "GET", Path: "/a", Header: http.Header{"X-User": {"42"}}, Weight: 1, Key: 42, HasKey: true},
				{Method: "GET", Path: "/b", Header: http.Header{"X-User": {"alice"}}, Weight: 1, Key: headerKey("alice"), HasKey: true},
				{Method: "GET", Path: "/health", Weight: 1},
			}},
		},
		{
			name: "key from a path pattern",
			yaml: `requests: {key: {path: "/users/{key}/"}, list: [{path: /users/17/orders}, {path: "/users/18/?q=1"}, {path: /users/x/}, {path: /users/19}]}`,
			want: &Requests{Key: &RequestKey{Path: "/users/{key}/"}, List: []Request{
				{Method: "GET", Path: "/users/17/orders", Weight: 1, Key: 17, HasKey: true},
				{Method: "GET", Path: "/users/18/?q=1", Weight: 1, Key: 18, HasKey: true},
				{Method: "GET", Path: "/users/x/", Weight: 1},
				{Method: "GET", Path: "/users/19", Weight: 1},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := writeCase(t, tt.yaml, tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, e.Requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		files map[string]string
		want  string // the error after the file's path
	}{
		{"neither form", "requests: {}", nil,
			"line 6: requests: give targets (a Vegeta targets file) or list (requests with weights)"},
		{"both forms", "requests: {targets: t.txt, list: [{path: /}]}", nil,
			"line 6: requests: give targets or list, not both"},
		{"negative weight", "requests: {list: [{path: /a}, {path: /b, weight: -1}]}", nil,
			"line 6: requests.list[1].weight: want a number > 0, got -1"},
		{"zero weight", "requests: {list: [{path: /a, weight: 0}]}", nil,
			"line 6: requests.list[0].weight: want a number > 0, got 0"},
		{"no path", "requests: {list: [{method: GET}]}", nil,
			"requests.list[0].path: is required, e.g. /orders"},
		{"relative path", "requests: {list: [{path: orders}]}", nil,
			`requests.list[0].path: want a path starting with /, got "orders"`},
		{"lower-case method", "requests: {list: [{method: post, path: /}]}", nil,
			`requests.list[0].method: want an HTTP method in capitals like GET or POST, got "post"`},
		{"bad header name", `requests: {list: [{path: /, headers: {"a b": x}}]}`, nil,
			`requests.list[0].headers: header name "a b": want letters, digits and`},
		{"unknown field", "requests: {list: [{path: /, wieght: 2}]}", nil,
			`line 6: requests.list[0]: unknown field "wieght"; did you mean "weight"?`},
		{"missing targets file", "requests: {targets: nope.txt}", nil,
			"requests.targets: open "},
		{"bad header line", "requests: {targets: targets.txt}",
			map[string]string{"targets.txt": "GET /a\n\n# b\nPOST /b\nContent-Type: text/plain\nnot a header\n"},
			"line 6: requests.targets: targets.txt line 6: bad header: not a header"},
		{"bad first line", "requests: {targets: targets.txt}",
			map[string]string{"targets.txt": "\n/a\n"},
			"line 6: requests.targets: targets.txt line 2: bad target: /a"},
		{"missing body file", "requests: {targets: targets.txt}",
			map[string]string{"targets.txt": "GET /a\n\nPOST /b\n@missing.json\n"},
			"requests.targets: targets.txt line 4: bad body: open "},
		{"line after the body", "requests: {targets: targets.txt}",
			map[string]string{"targets.txt": "POST /b\n@b.json\nX-After: 1\n", "b.json": "{}"},
			"line 6: requests.targets: targets.txt line 3: bad method: X-After:"},
		{"bad URL", "requests: {targets: targets.txt}",
			map[string]string{"targets.txt": "GET a b\n"},
			"requests.targets: targets.txt line 1: bad URL: a b"},
		{"empty targets file", "requests: {targets: targets.txt}",
			map[string]string{"targets.txt": "# nothing\n"},
			`line 6: requests.targets: targets.txt: no targets (want lines like "GET /path")`},
		{"JSON without a method", "requests: {targets: t.json, format: json}",
			map[string]string{"t.json": `{"method": "GET", "url": "/a"}` + "\n\n" + `{"url": "/b"}` + "\n"},
			"line 6: requests.targets: t.json line 3: target: required method is missing"},
		{"JSON with a bad URL", "requests: {targets: t.json, format: json}",
			map[string]string{"t.json": `{"method": "GET", "url": "a b"}`},
			"requests.targets: t.json line 1: bad URL: "},
		{"unknown format", "requests: {targets: t.txt, format: yaml}", nil,
			`requests.format: must be http or json, got "yaml"`},
		{"format without targets", "requests: {format: json, list: [{path: /}]}", nil,
			"line 6: requests.format: is the format of a targets file; give it with targets"},
		{"key and keys", "keys: {dist: uniform, n: 10}\nrequests: {key: {header: X-User}, list: [{path: /, headers: {X-User: '1'}}]}", nil,
			"line 7: requests.key: and keys both give requests a key; keep one: keys draws them, requests.key reads them from the requests"},
		{"key header and path", `requests: {key: {header: X-User, path: "/u/{key}"}, list: [{path: /}]}`, nil,
			"line 6: requests.key: give header or path, not both"},
		{"empty key", "requests: {key: {}, list: [{path: /}]}", nil,
			`requests.key: want {header: NAME} or {path: "/users/{key}/"}`},
		{"pattern without {key}", `requests: {key: {path: "/users/"}, list: [{path: /}]}`, nil,
			`requests.key.path: the pattern must hold {key} once, e.g. "/users/{key}/", got "/users/"`},
		{"no request has the header", "requests: {key: {header: X-User}, list: [{path: /}]}", nil,
			"line 6: requests.key.header: no request has header X-User"},
		{"no path matches", `requests: {key: {path: "/users/{key}"}, list: [{path: /orders/1}]}`, nil,
			`requests.key.path: no request's path matches "/users/{key}" with a number at {key}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := writeCase(t, tt.yaml, tt.files)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			_, after, ok := strings.Cut(msg(err, "my-case.yaml: "+tt.want), string(filepath.Separator)+"my-case.yaml: ")
			if !ok || !strings.HasPrefix(after, tt.want) {
				t.Errorf("error %q\nwant .../my-case.yaml: %s...", err, tt.want)
			}
		})
	}
}

func TestShippedExperimentHasNoTargetsDirectory(t *testing.T) {
	_, err := parse("experiments/x.yaml", "", []byte(strings.Replace(requestsBase, "my-case", "x", 1)+"requests: {targets: t.txt}\n"))
	want := "experiments/x.yaml: requests.targets: " + errNoDir.Error()
	if err == nil || msg(err, want) != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestTargetsFileMustBeRegular: a targets file that is a device (or a
// FIFO) would be read forever; it is refused at once, and so is a
// directory.
func TestTargetsFileMustBeRegular(t *testing.T) {
	for _, read := range []func(string) ([]Request, error){readTargets, readJSONTargets} {
		for _, path := range []string{"/dev/zero", t.TempDir()} {
			if _, err := os.Stat(path); err != nil {
				continue
			}
			done := make(chan error, 1)
			go func() { _, err := read(path); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("%s: err = %v, want one saying it is not a regular file", path, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: still reading after 10 s", path)
			}
		}
	}
}

package experiments

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Requests are the experiment's own requests: the load generator sends
// request k of List, chosen by the seed and k (see Pick in harness/engine).
// Without Requests every request is GET /.
type Requests struct {
	// Targets is the Vegeta targets file as written in the experiment
	// (relative to the experiment file's directory); "" for an inline
	// list. Its targets are sent round-robin, in file order, as Vegeta
	// does.
	Targets string
	// Format is the targets file's format: TargetsHTTP or TargetsJSON.
	Format string
	// List holds the requests: the targets file's in file order, or the
	// inline list's. Every one has a Weight > 0 (a targets file's are 1).
	List []Request
	// Key, when set, is where a request's affinity key comes from; each
	// request's Key and HasKey are filled in from it.
	Key *RequestKey
}

// Formats of a targets file, as Vegeta's -format flag names them.
const (
	TargetsHTTP = "http" // "METHOD URL", header lines, "@file" body
	TargetsJSON = "json" // one JSON object a line: method, url, header, body (base64)
)

// RoundRobin reports whether the requests are sent in turn (a targets
// file) rather than drawn by weight (an inline list).
func (r *Requests) RoundRobin() bool { return r.Targets != "" }

// Request is one request: a method, a path (with any query) that is sent
// to whichever instance the balancer picks, headers and a body.
type Request struct {
	Method string
	Path   string
	Header http.Header // as written: a targets file's names keep their case, as in Vegeta
	Body   []byte
	Weight float64
	Key    uint64 // the affinity key, when HasKey
	HasKey bool
}

// RequestKey names where a request's key comes from: the value of header
// Header (a decimal number is the key; any other value is hashed with
// 64-bit FNV-1a), or the number in the path at the {key} of Path, a
// pattern matched against the start of the path ("/users/{key}/").
type RequestKey struct {
	Header string
	Path   string
}

// keyPlaceholder marks the key in a RequestKey's Path pattern.
const keyPlaceholder = "{key}"

// of returns the key r carries, if any.
func (k *RequestKey) of(r Request) (uint64, bool) {
	if k.Header != "" {
		// A targets file's names keep their case: match any case, the
		// first name in sorted order if several do.
		for _, name := range slices.Sorted(maps.Keys(r.Header)) {
			if vs := r.Header[name]; strings.EqualFold(name, k.Header) && len(vs) > 0 {
				return headerKey(vs[0]), true
			}
		}
		return 0, false
	}
	before, after, _ := strings.Cut(k.Path, keyPlaceholder)
	path, _, _ := strings.Cut(r.Path, "?")
	rest, ok := strings.CutPrefix(path, before)
	if !ok {
		return 0, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || !strings.HasPrefix(rest[n:], after) {
		return 0, false
	}
	v, err := strconv.ParseUint(rest[:n], 10, 64)
	return v, err == nil
}

// headerKey is the key a header value stands for: the number it is, or
// else its 64-bit FNV-1a hash.
func headerKey(v string) uint64 {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(v))
	return h.Sum64()
}

// fileRequests is the on-disk shape of requests.
type fileRequests struct {
	Targets string          `yaml:"targets"`
	Format  string          `yaml:"format"`
	List    []fileRequest   `yaml:"list"`
	Key     *fileRequestKey `yaml:"key"`
}

type fileRequest struct {
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Weight  *float64          `yaml:"weight"`
}

type fileRequestKey struct {
	Header string `yaml:"header"`
	Path   string `yaml:"path"`
}

// errNoDir is why a targets file cannot be read for an experiment built
// into the binary.
var errNoDir = errors.New("a shipped experiment has no directory to read a targets file from; use requests.list, or copy the experiment to a file next to its targets")

// build reads the targets file (relative to dir; "" = no directory) or
// converts the inline list, and fills in every request's key.
func (f *fileRequests) build(dir string) (*Requests, error) {
	rs := &Requests{Targets: f.Targets}
	switch {
	case f.Targets != "" && f.List != nil:
		return nil, fieldErr("requests", "give targets or list, not both")
	case f.Format != "" && f.Targets == "":
		return nil, fieldErr("requests.format", "is the format of a targets file; give it with targets")
	case f.Targets != "" && f.Format != "" && f.Format != TargetsHTTP && f.Format != TargetsJSON:
		return nil, fieldErr("requests.format", "must be %s or %s, got %q", TargetsHTTP, TargetsJSON, f.Format)
	case f.Targets != "":
		if dir == "" {
			return nil, fieldErr("requests.targets", "%v", errNoDir)
		}
		path := f.Targets
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		rs.Format = TargetsHTTP
		read := readTargets
		if f.Format == TargetsJSON {
			rs.Format, read = TargetsJSON, readJSONTargets
		}
		list, err := read(path)
		if err != nil {
			return nil, fieldErr("requests.targets", "%v", err)
		}
		rs.List = list
	case len(f.List) > 0:
		for i, fr := range f.List {
			r := Request{Method: fr.Method, Path: fr.Path, Weight: 1}
			if r.Method == "" {
				r.Method = http.MethodGet
			}
			if fr.Body != "" {
				r.Body = []byte(fr.Body)
			}
			if len(fr.Headers) > 0 {
				r.Header = http.Header{}
				for k, v := range fr.Headers {
					r.Header[k] = []string{v}
				}
				if err := checkHeader(r.Header); err != nil {
					return nil, fieldErr(fmt.Sprintf("requests.list[%d].headers", i), "%v", err)
				}
			}
			if fr.Weight != nil {
				r.Weight = *fr.Weight
			}
			if r.Path == "" {
				return nil, fieldErr(fmt.Sprintf("requests.list[%d].path", i), "is required, e.g. /orders")
			}
			rs.List = append(rs.List, r)
		}
	default:
		return nil, fieldErr("requests", "give targets (a Vegeta targets file) or list (requests with weights)")
	}
	if f.Key != nil {
		rs.Key = &RequestKey{Header: f.Key.Header, Path: f.Key.Path}
	}
	return rs, nil
}

// validate checks every request and the key, and fills in each request's
// Key and HasKey from the key (it is run again after overrides; the
// result is the same).
func (r *Requests) validate() error {
	if len(r.List) == 0 {
		return fieldErr("requests", "has no requests")
	}
	for i, q := range r.List {
		name := fmt.Sprintf("requests.list[%d]", i)
		if r.RoundRobin() {
			name = fmt.Sprintf("requests.targets (target %d)", i)
		}
		switch {
		case !methodRe.MatchString(q.Method):
			return fieldErr(name+".method", "want an HTTP method in capitals like GET or POST, got %q", q.Method)
		case !strings.HasPrefix(q.Path, "/"):
			return fieldErr(name+".path", "want a path starting with /, got %q", q.Path)
		case !(q.Weight > 0) || math.IsInf(q.Weight, 0):
			return fieldErr(name+".weight", "want a number > 0, got %v", q.Weight)
		}
		if _, err := url.ParseRequestURI(q.Path); err != nil {
			return fieldErr(name+".path", "%q is not a request path: %v", q.Path, err)
		}
	}
	if r.Key == nil {
		for i := range r.List {
			r.List[i].Key, r.List[i].HasKey = 0, false
		}
		return nil
	}
	k := r.Key
	switch {
	case k.Header != "" && k.Path != "":
		return fieldErr("requests.key", "give header or path, not both")
	case k.Header == "" && k.Path == "":
		return fieldErr("requests.key", `want {header: NAME} or {path: "/users/{key}/"}`)
	case k.Path != "" && strings.Count(k.Path, keyPlaceholder) != 1:
		return fieldErr("requests.key.path", "the pattern must hold %s once, e.g. \"/users/{key}/\", got %q", keyPlaceholder, k.Path)
	case k.Path != "" && !strings.HasPrefix(k.Path, "/"):
		return fieldErr("requests.key.path", "want a pattern starting with /, got %q", k.Path)
	}
	some := false
	for i := range r.List {
		r.List[i].Key, r.List[i].HasKey = k.of(r.List[i])
		some = some || r.List[i].HasKey
	}
	if !some {
		if k.Header != "" {
			return fieldErr("requests.key.header", "no request has header %s", k.Header)
		}
		return fieldErr("requests.key.path", "no request's path matches %q with a number at %s", k.Path, keyPlaceholder)
	}
	return nil
}

// checkHeader reports the first header of h whose name is not an HTTP
// token (letters, digits and !#$%&'*+-.^_`|~), which no client sends, or
// whose value is not UTF-8 text without control characters (a tab
// aside), which a targets file written back would not keep.
func checkHeader(h http.Header) error {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return fmt.Errorf("header name %q: want letters, digits and !#$%%&'*+-.^_`|~", name)
		}
		for _, v := range h[name] {
			bad := !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return r != '\t' && (r < ' ' || r == 0x7f) }) >= 0
			if bad {
				return fmt.Errorf("header %s: value %q: want UTF-8 text without control characters", name, v)
			}
		}
	}
	return nil
}

// isTokenChar reports whether r may appear in an HTTP token (RFC 9110).
func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// methodRe is what Vegeta takes for a method: capital letters.
var methodRe = regexp.MustCompile(`^[A-Z]+$`)

// targetStart is how Vegeta tells a target's first line: a word in
// capitals and a space.
var targetStart = regexp.MustCompile(`^[A-Z]+\s`)

// readTargets reads a targets file in Vegeta's http format with Vegeta's
// own parser, one target at a time, so that an error names its line.
// "@file" bodies are relative to the targets file. The host of a target's
// URL is dropped: the balancer picks the instance.
func readTargets(path string) ([]Request, error) {
	data, err := readTargetsFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	lines := strings.Split(string(data), "\n")
	// Each target's lines run from its method line to the next one; lines
	// before the first are a target of their own, which Vegeta rejects
	// unless they are blank or comments.
	var starts []int
	for i, l := range lines {
		if i == 0 || targetStart.MatchString(strings.TrimSpace(l)) {
			starts = append(starts, i)
		}
	}
	var list []Request
	for b, s := range starts {
		e := len(lines)
		if b+1 < len(starts) {
			e = starts[b+1]
		}
		tgts, bad, err := parseTargets(lines[s:e], filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, s+bad+1, err)
		}
		for _, t := range tgts {
			u, err := url.ParseRequestURI(t.URL)
			if err != nil { // Vegeta has parsed it already
				return nil, fmt.Errorf("%s line %d: %v", name, s+1, err)
			}
			if err := checkTargetPath(t.URL, u); err != nil {
				return nil, fmt.Errorf("%s line %d: %v", name, s+1, err)
			}
			if err := checkHeader(t.Header); err != nil {
				return nil, fmt.Errorf("%s line %d: %v", name, s+1, err)
			}
			list = append(list, Request{Method: t.Method, Path: u.RequestURI(), Header: t.Header, Body: t.Body, Weight: 1})
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no targets (want lines like \"GET /path\")", name)
	}
	return list, nil
}

// readJSONTargets reads a targets file in Vegeta's JSON format, one
// target a line, each with Vegeta's own decoder. The host of a target's
// URL is dropped: the balancer picks the instance.
func readJSONTargets(path string) ([]Request, error) {
	data, err := readTargetsFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	var list []Request
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var t vegeta.Target
		if err := vegeta.NewJSONTargeter(strings.NewReader(l+"\n"), nil, nil)(&t); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, i+1, err)
		}
		if !methodRe.MatchString(t.Method) {
			return nil, fmt.Errorf("%s line %d: method %q: want an HTTP method in capital letters, such as GET", name, i+1, t.Method)
		}
		u, err := url.ParseRequestURI(t.URL)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: bad URL: %v", name, i+1, err)
		}
		if err := checkTargetPath(t.URL, u); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, i+1, err)
		}
		if err := checkHeader(t.Header); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, i+1, err)
		}
		list = append(list, Request{Method: t.Method, Path: u.RequestURI(), Header: t.Header, Body: t.Body, Weight: 1})
	}
	if len(list) == 0 {
		return nil, fmt.Errorf(`%s: no targets (want lines like {"method": "GET", "url": "/path"})`, name)
	}
	return list, nil
}

// checkTargetPath rejects a target URL (raw as written, u as parsed) that
// has no absolute path to send, such as "a:b", whose opaque part is no
// path.
func checkTargetPath(raw string, u *url.URL) error {
	if !strings.HasPrefix(u.RequestURI(), "/") {
		return fmt.Errorf("URL %q has no absolute path (want /path or http://host/path)", raw)
	}
	return nil
}

// parseTargets parses lines (one target with its headers and body, or
// only blanks and comments) with vegeta.NewHTTPTargeter. On error, bad is
// the index of the line at fault: the shortest prefix of lines that Vegeta
// rejects ends there.
func parseTargets(lines []string, dir string) (tgts []vegeta.Target, bad int, err error) {
	lines = absBodies(lines, dir)
	if tgts, err = decodeTargets(lines); err == nil {
		return tgts, 0, nil
	}
	for n := 1; n < len(lines); n++ {
		if _, perr := decodeTargets(lines[:n]); perr != nil {
			return nil, n - 1, perr
		}
	}
	return nil, len(lines) - 1, err
}

// decodeTargets returns every target Vegeta reads from lines.
func decodeTargets(lines []string) ([]vegeta.Target, error) {
	src := strings.NewReader(strings.Join(lines, "\n"))
	tr := vegeta.NewHTTPTargeter(src, nil, nil)
	var tgts []vegeta.Target
	for {
		var t vegeta.Target
		err := tr(&t)
		if errors.Is(err, vegeta.ErrNoTargets) {
			return tgts, nil
		}
		if err != nil {
			return nil, err
		}
		tgts = append(tgts, t)
	}
}

// absBodies rewrites "@file" lines to name the file relative to dir.
func absBodies(lines []string, dir string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if p, ok := strings.CutPrefix(t, "@"); ok && i > 0 && !filepath.IsAbs(p) {
			l = "@" + filepath.Join(dir, p)
		}
		out[i] = l
	}
	return out
}

// maxTargetsFile bounds a targets file: every target of it is held in
// memory for the whole run.
const maxTargetsFile = 64 << 20

// readTargetsFile reads a targets file, which must be a regular file (a
// device such as /dev/zero or a FIFO would never end) of at most
// maxTargetsFile bytes.
func readTargetsFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > maxTargetsFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d MiB a targets file may hold", path, st.Size(), maxTargetsFile>>20)
	}
	return io.ReadAll(io.LimitReader(f, maxTargetsFile))
}

package proxies

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// Placeholder marks the line of a team's own proxy file (nginx:file,
// haproxy:file) where lbchaos writes one server line per instance. It
// starts a line of its own; what follows it on that line is given to every
// server: "{{servers}} max_fails=3 fail_timeout=10s;" (nginx) writes
// "server HOST:PORT max_fails=3 fail_timeout=10s;", "{{servers}} check
// inter 1s" (HAProxy) writes "server iN HOST:PORT check inter 1s".
const Placeholder = "{{servers}}"

// fileTemplate is a team's own balancing section: the body of an nginx
// upstream block or of a HAProxy backend section, with the servers at
// Placeholder. lbchaos writes everything around it.
type fileTemplate struct {
	path          string
	before, after string // the file's lines around the placeholder line, verbatim
	options       string // what follows Placeholder on its line, for each server
	keepalive     bool   // nginx: the file sets its own keepalive
}

// haproxySections start a new section of a HAProxy configuration, which
// would end the backend the file is the body of.
var haproxySections = []string{"global", "defaults", "frontend", "backend", "listen", "resolvers", "peers",
	"userlist", "cache", "program", "http-errors", "ring", "mailers", "crt-store", "traces", "log-forward"}

// readTemplate reads and checks the proxy file at path (absolute, resolved
// by the experiment) for proxy kind. Its errors name the file and the line.
func readTemplate(kind, path string) (*fileTemplate, error) {
	if path == "" {
		return nil, fmt.Errorf("%s:file: no file given (the experiment resolves the spec's path)", kind)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s:file: cannot read %s: %v", kind, path, err)
	}
	return parseTemplate(kind, path, string(data))
}

// parseTemplate checks text, the file at path: Placeholder exactly once,
// at the start of a line, and nothing that would take over what lbchaos
// writes (servers of its own, the end of the block or section, lbchaos's
// attribution header).
func parseTemplate(kind, path, text string) (*fileTemplate, error) {
	t := &fileTemplate{path: path}
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:file: %s:%d: %s", kind, path, line, fmt.Sprintf(format, args...))
	}
	lines := strings.SplitAfter(text, "\n")
	at := 0      // the placeholder's line, 1-based
	stmt := true // nginx: the next word starts a directive
	for i, line := range lines {
		n := i + 1
		code, _, _ := strings.Cut(line, "#")
		if strings.Contains(strings.ToLower(code), strings.ToLower(UpstreamHeader)) {
			return nil, fail(n, "mentions %s, the header lbchaos attributes responses by; leave it to lbchaos", UpstreamHeader)
		}
		if strings.HasPrefix(strings.TrimSpace(code), Placeholder) {
			if at != 0 {
				return nil, fail(n, "%s again (first on line %d); it must appear once", Placeholder, at)
			}
			at = n
			opts := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(code), Placeholder))
			if kind == proxyspec.Nginx {
				opts = strings.TrimSpace(strings.TrimSuffix(opts, ";"))
				if strings.ContainsAny(opts, ";{}") {
					return nil, fail(n, "the server options after %s end at the line's end, with one \";\"; put other directives on lines of their own", Placeholder)
				}
			}
			if strings.Contains(opts, Placeholder) {
				return nil, fail(n, "%s again on its own line; it must appear once", Placeholder)
			}
			t.options = opts
			stmt = true
			continue
		}
		if strings.Contains(code, Placeholder) {
			return nil, fail(n, "%s must start its line: lbchaos replaces that line with one server line per instance", Placeholder)
		}
		switch kind {
		case proxyspec.Nginx:
			words := strings.Fields(strings.NewReplacer(";", " ; ", "{", " { ", "}", " } ").Replace(code))
			for _, w := range words {
				switch {
				case w == ";":
					stmt = true
				case w == "{" || w == "}":
					return nil, fail(n, "%q: the file is the body of one upstream block, which a brace would end or nest a block in", w)
				case stmt:
					stmt = false
					switch w {
					case "server":
						return nil, fail(n, "a server line of its own: lbchaos writes the servers at %s (their addresses attribute each response to an instance); give their options after %s", Placeholder, Placeholder)
					case "keepalive":
						t.keepalive = true
					}
				}
			}
		case proxyspec.HAProxy:
			words := strings.Fields(code)
			if len(words) == 0 {
				continue
			}
			switch w := strings.ToLower(words[0]); {
			case w == "server" || w == "server-template":
				return nil, fail(n, "a %s line of its own: lbchaos writes the servers at %s (their names attribute each response to an instance); give their options after %s or on a default-server line", w, Placeholder, Placeholder)
			case slices.Contains(haproxySections, w):
				return nil, fail(n, "%q starts a new section; the file is the body of one backend section", words[0])
			}
		}
	}
	if at == 0 {
		return nil, fmt.Errorf("%s:file: %s has no %s line: put %s on a line of its own where lbchaos is to write the servers", kind, path, Placeholder, Placeholder)
	}
	t.before = strings.Join(lines[:at-1], "")
	t.after = strings.Join(lines[at:], "")
	if t.before != "" && !strings.HasSuffix(t.before, "\n") {
		t.before += "\n"
	}
	if t.after != "" && !strings.HasSuffix(t.after, "\n") {
		t.after += "\n"
	}
	return t, nil
}

// fileMarker precedes the file's lines in a generated configuration, so
// that a proxy's message about a line of the configuration can be traced
// back to the file.
func fileMarker(path string) string {
	return "# lbchaos: from " + path + " (" + Placeholder + " replaced by the servers)"
}

// fileLine says where the file's first line is in the generated
// configuration text, for a proxy's message: "line N".
func fileLine(text, path string) int {
	i := strings.Index(text, fileMarker(path))
	if i < 0 {
		return 0
	}
	return strings.Count(text[:i], "\n") + 2
}

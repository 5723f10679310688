package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProxyFiles: a file strategy's path is resolved once, when the
// experiment is loaded: against the experiment file's directory, or, for a
// strategy only the command line names, the current directory; a missing
// file fails the load.
func TestProxyFiles(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "lb")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "upstream.conf"), filepath.Join(sub, "backend.cfg")} {
		if err := os.WriteFile(p, []byte("{{servers}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, strategies string) string {
		t.Helper()
		p := filepath.Join(dir, name+".yaml")
		body := "name: " + name + "\nduration: 1s\nrate: 10\ninstances: {count: 2, service: {dist: fixed, value: 1ms}}\nstrategies: " + strategies + "\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	abs := filepath.Join(sub, "backend.cfg")

	t.Run("relative to the file", func(t *testing.T) {
		e, err := LoadFile(write("good", `["nginx:file(path=upstream.conf)", "haproxy:file(path=lb/backend.cfg)", "haproxy:file(path=`+abs+`)", p2c]`))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"nginx:file(path=upstream.conf)":    filepath.Join(dir, "upstream.conf"),
			"haproxy:file(path=lb/backend.cfg)": abs,
			"haproxy:file(path=" + abs + ")":    abs,
		}
		if d := cmp.Diff(want, e.ProxyFiles); d != "" {
			t.Errorf("ProxyFiles (-want +got):\n%s", d)
		}

		t.Chdir(sub)
		c, err := e.Apply(Overrides{Strategies: []string{"nginx:file(path=upstream.conf)", "haproxy:file(path=backend.cfg)"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ProxyFiles["nginx:file(path=upstream.conf)"]; got != filepath.Join(dir, "upstream.conf") {
			t.Errorf("a strategy the file lists: %s, want the file's resolution", got)
		}
		if got := c.ProxyFiles["haproxy:file(path=backend.cfg)"]; got != abs {
			t.Errorf("a strategy from the command line: %s, want %s (the current directory's)", got, abs)
		}
		_, err = e.Apply(Overrides{Strategies: []string{"nginx:file(path=missing.conf)"}})
		if want := "after command-line overrides: strategies[0]: nginx:file: cannot read " + filepath.Join(sub, "missing.conf") + ": no such file or directory"; err == nil || err.Error() != want {
			t.Errorf("error %v\nwant  %s", err, want)
		}
	})

	for _, tt := range []struct {
		name, strategies, err string
	}{
		{"missing", `["nginx:file(path=nope.conf)"]`, "strategies[0]: nginx:file: cannot read " + filepath.Join(dir, "nope.conf") + ": no such file or directory"},
		{"directory", `["haproxy:file(path=lb)"]`, "strategies[0]: haproxy:file: cannot read " + sub + ": is a directory"},
		{"bad path", `["p2c", "nginx:file(path=a,b.conf)"]`, `line 5: strategies[1]: nginx:file: path "a,b.conf" contains ",", which a strategy spec cannot carry`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(tt.name, tt.strategies)
			_, err := LoadFile(p)
			if err == nil || !strings.Contains(msg(err, tt.err), p+": "+tt.err) {
				t.Errorf("error %v\nwant  %s: %s", err, p, tt.err)
			}
		})
	}

	t.Run("shipped experiments have no directory", func(t *testing.T) {
		_, err := parse("experiments/x.yaml", "", []byte("name: x\nduration: 1s\nrate: 10\ninstances: {count: 1, service: {dist: fixed, value: 1ms}}\nstrategies: [\"nginx:file(path=u.conf)\"]\n"))
		want := `experiments/x.yaml: strategies[0]: nginx:file: path "u.conf" is relative, and a shipped experiment has no directory to resolve it against: give an absolute path`
		if err == nil || msg(err, want) != want {
			t.Errorf("error %v\nwant  %s", err, want)
		}
	})
}

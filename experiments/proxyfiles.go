package experiments

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// resolveProxyFiles returns known with, added, the absolute path of every
// file strategy of specs (nginx:file(path=...), haproxy:file(path=...))
// that known lacks: an absolute path as it is, a relative one joined to
// dir; dir "" is a shipped experiment's,
// which has none. field names specs[i] in errors. Specs that do not parse
// are left to Validate.
func resolveProxyFiles(specs []string, dir string, known map[string]string, field func(i int) string) (map[string]string, error) {
	out := maps.Clone(known)
	for i, s := range specs {
		if _, ok := out[s]; ok || !proxyspec.IsProxy(s) {
			continue
		}
		ps, err := proxyspec.Parse(s)
		if err != nil || ps.Algorithm != proxyspec.File {
			continue
		}
		p := ps.Params["path"]
		if !filepath.IsAbs(p) {
			if dir == "" {
				return nil, fieldErr(field(i), "%s:file: path %q is relative, and a shipped experiment has no directory to resolve it against: give an absolute path", ps.Kind, p)
			}
			p = filepath.Join(dir, p)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[s] = filepath.Clean(p)
	}
	return out, nil
}

// checkProxyFile checks that the file of file strategy s exists and can
// be read; what it holds is checked by the proxy's harness before the run.
func (e *Experiment) checkProxyFile(field, s string, ps proxyspec.Spec) error {
	p, ok := e.ProxyFiles[s]
	if !ok {
		return fieldErr(field, "%s:file: path %q was not resolved (load the experiment with Parse, Load or Apply)", ps.Kind, ps.Params["path"])
	}
	f, err := os.Open(p)
	if err == nil {
		var st fs.FileInfo
		if st, err = f.Stat(); err == nil && st.IsDir() {
			err = errors.New("is a directory")
		}
		f.Close()
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fieldErr(field, "%s:file: cannot read %s: %v", ps.Kind, p, err)
	}
	return nil
}

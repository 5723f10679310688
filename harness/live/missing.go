package live

import (
	"fmt"
	"strings"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/proxies"
)

var _ engine.Skipper = (*Engine)(nil)

// MissingProxies is Check's error when proxy strategies of the experiment
// need proxies that are not installed here (and Options.SkipMissing is not
// set): all of them at once, so that one run names everything to install.
type MissingProxies struct {
	// Strategies are the strategies concerned, in the experiment's order,
	// and Why what each lacks and how to install it (errors wrapping
	// proxies.ErrNotInstalled).
	Strategies []string
	Why        []error
}

func (m *MissingProxies) Error() string {
	// One line per thing to install, naming the strategies that need it.
	var order []string
	names := map[string][]string{}
	for i, s := range m.Strategies {
		why := m.Why[i].Error()
		if names[why] == nil {
			order = append(order, why)
		}
		names[why] = append(names[why], s)
	}
	var b strings.Builder
	b.WriteString("strategies whose proxy is not installed (install it, or give --skip-missing to leave these strategies out and run the rest):")
	for _, why := range order {
		fmt.Fprintf(&b, "\n  %s: %s", strings.Join(names[why], ", "), why)
	}
	return b.String()
}

// Unwrap returns what each strategy lacks.
func (m *MissingProxies) Unwrap() []error { return m.Why }

// missing returns an error wrapping proxies.ErrNotInstalled when strategy
// name is a proxy strategy whose proxy is not installed, else nil.
func (e *Engine) missing(name string) error {
	if e.opts.ProxyMissing != nil {
		return e.opts.ProxyMissing(name)
	}
	return proxies.Missing(name, e.opts.LbchaosBinary)
}

// Skip implements engine.Skipper: with Options.SkipMissing, a proxy
// strategy whose proxy is not installed is left out.
func (e *Engine) Skip(_ *experiments.Experiment, name string) string {
	if !e.opts.SkipMissing {
		return ""
	}
	if err := e.missing(name); err != nil {
		return fmt.Sprintf("%s: %v; left out of the run (--skip-missing).", name, err)
	}
	return ""
}

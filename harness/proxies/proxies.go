// Package proxies runs real load balancers as strategies under test: nginx,
// HAProxy and lbchaos proxy (package lbproxy). It writes each one's
// configuration for the current backends, starts it in its own process
// group on a free loopback port, waits until it answers, maps what it says
// about upstreams back to instance ids, and stops it. The catalogue of
// proxy specs (what each proxy offers) is proxyspec.Parse.
package proxies

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/harness/proxies/lbproxy"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// UpstreamHeader is set by a proxy under test on every response it sends,
// its own errors included: the backend it chose (nginx: its address,
// HAProxy: its server name "iN", lbchaos proxy: the instance id). It
// attributes a response the backend did not answer itself.
const UpstreamHeader = transport.UpstreamHeader

// readyPath is answered by every proxy under test itself, without a
// backend, once it accepts requests.
const readyPath = lbproxy.ReadyPath

// OwnTimeout is the timeout a proxy under test applies itself, for a
// client timeout of client: longer, so that the client's timeout is what
// ends a request, as it does for the built-in strategies.
func OwnTimeout(client time.Duration) time.Duration { return client + 5*time.Second }

// proxyConfig is what a proxy's configuration is generated from.
type proxyConfig struct {
	spec     proxyspec.Spec
	listen   string     // 127.0.0.1:port
	backends []*url.URL // indexed by instance id
	timeout  time.Duration
	dir      string        // a private directory for the configuration, logs and pid
	lbchaos  string        // the lbchaos binary, for proxyspec.Lbchaos
	seed     uint64        // proxyspec.Lbchaos: of the strategy's random choices
	file     *fileTemplate // a file spec's balancing section; nil otherwise
}

// attribution reads the access log: for each request sequence number the
// instance the proxy sent it to (the last one tried), when it names one.
func (p *proxyProcess) attribution() (map[uint64]int, error) {
	switch {
	case p.cfg.spec.ConnLevel():
		return nil, fmt.Errorf("%s balances connections: its log attributes client connections (ConnAttribution), not requests", generatedFor(p.cfg))
	case p.cfg.spec.Kind == proxyspec.Caddy:
		return p.caddyAttribution()
	}
	out := map[uint64]int{}
	err := p.readLog(func(l logLine) {
		if n := len(l.upstreams); n > 0 {
			if id, ok := p.ids[l.upstreams[n-1]]; ok {
				out[l.seq] = id
			}
		}
	})
	return out, err
}

// instanceOf maps an upstream as the proxy names it to an instance id;
// of a list of those tried ("addr1, addr2", nginx after a retry) the last.
func (p *proxyProcess) instanceOf(upstream string) (int, bool) { return InstanceIn(p.ids, upstream) }

// InstanceIn maps an upstream as a proxy names it to an instance id by
// ids (Proxy.Upstreams); of a list of those tried ("addr1, addr2", nginx
// after a retry) the last.
func InstanceIn(ids map[string]int, upstream string) (int, bool) {
	parts := strings.FieldsFunc(upstream, func(r rune) bool { return r == ',' || r == ' ' })
	if len(parts) == 0 {
		return 0, false
	}
	id, ok := ids[parts[len(parts)-1]]
	return id, ok
}

// Proxy is a proxy under test, running.
type Proxy struct{ p *proxyProcess }

// Start starts proxy strategy spec (e.g. "nginx:least_conn") on a free
// loopback port in front of backends (base URLs indexed by instance id),
// for a client whose requests time out after timeout. file is the absolute
// path of a file spec's section (nginx:file, haproxy:file), as the
// experiment resolved it, and "" for other specs; the file is read and
// checked here. lbchaos is the lbchaos binary (for lbchaos: strategies) and
// seed the experiment's seed, which their strategy's random choices start
// from. It returns once the proxy answers; on error nothing is left
// running.
func Start(ctx context.Context, spec, file string, backends []*url.URL, timeout time.Duration, lbchaos string, seed uint64) (*Proxy, error) {
	ps, tmpl, err := parse(spec, file)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lbchaos-"+ps.Kind+"-")
	if err != nil {
		return nil, err
	}
	listen, err := freeLoopbackAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("find a free port for %s: %w", ps.Kind, err)
	}
	p, err := startProxy(ctx, proxyConfig{spec: ps, listen: listen, backends: backends, timeout: timeout, dir: dir, lbchaos: lbchaos, seed: seed, file: tmpl})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Proxy{p}, nil
}

// URL is where the proxy listens.
func (x *Proxy) URL() *url.URL { return &url.URL{Scheme: "http", Host: x.p.cfg.listen} }

// Kind is the proxy's kind: proxyspec.Nginx, HAProxy, Caddy or
// Lbchaos.
func (x *Proxy) Kind() string { return x.p.cfg.spec.Kind }

// InstanceOf maps an upstream as the proxy names it (UpstreamHeader, its
// access log) to an instance id.
func (x *Proxy) InstanceOf(upstream string) (int, bool) { return x.p.instanceOf(upstream) }

// Upstreams returns how the proxy names its upstreams, each with its
// instance id, for InstanceIn: what InstanceOf knows, to hand to another
// process.
func (x *Proxy) Upstreams() map[string]int { return maps.Clone(x.p.ids) }

// Stop stops the proxy gracefully (its access log flushed), waits until it
// is gone, and keeps its directory for Attribution. Idempotent.
func (x *Proxy) Stop() { x.p.stop() }

// Attribution reads the access log of a stopped proxy: for each request
// sequence number the instance it was sent to (the last one tried).
func (x *Proxy) Attribution() (map[uint64]int, error) { return x.p.attribution() }

// ConnLevel reports whether the proxy balances connections (+tcp,
// +stream): its answers carry no UpstreamHeader, and a request without an
// answer is attributed by its client connection (ConnAttribution).
func (x *Proxy) ConnLevel() bool { return x.p.cfg.spec.ConnLevel() }

// ConnAttribution reads the connection log of a stopped connection-level
// proxy: which instance each client connection went to.
func (x *Proxy) ConnAttribution() (*ConnMap, error) { return x.p.connAttribution() }

// Close stops the proxy and removes its directory.
func (x *Proxy) Close() {
	x.p.stop()
	os.RemoveAll(x.p.cfg.dir)
}

// Check returns an error when spec's proxy cannot run here: it is not
// installed, (lbchaos:) no lbchaos binary was given, or (file specs) the
// file, at the absolute path file, cannot be read, is not a section
// lbchaos can complete, or the proxy's own check rejects the configuration
// made from it.
func Check(spec, file, lbchaos string) error {
	ps, tmpl, err := parse(spec, file)
	if err != nil {
		return err
	}
	bin, err := proxyBinary(ps.Kind, lbchaos)
	if err != nil {
		return err
	}
	if ps.Kind == proxyspec.Nginx && ps.ConnLevel() {
		if _, err := nginxStreamModule(); err != nil {
			return err
		}
	}
	if tmpl == nil {
		return nil
	}
	// A file is the team's text: have the proxy check it now, with one
	// server, so that a rejection comes before any backend starts.
	dir, err := os.MkdirTemp("", "lbchaos-"+ps.Kind+"-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	one := &url.URL{Scheme: "http", Host: "127.0.0.1:9"}
	_, err = configure(context.Background(), bin, proxyConfig{spec: ps, listen: "127.0.0.1:9", backends: []*url.URL{one}, timeout: time.Second, dir: dir, file: tmpl}, filepath.Join(dir, "access.log"))
	return err
}

// parse parses spec and, for a file spec, reads and checks its file.
func parse(spec, file string) (proxyspec.Spec, *fileTemplate, error) {
	ps, err := proxyspec.Parse(spec)
	if err != nil || ps.Algorithm != proxyspec.File {
		return ps, nil, err
	}
	t, err := readTemplate(ps.Kind, file)
	return ps, t, err
}

// Installed returns an error saying how to install proxy kind when it is
// missing; lbchaos is the lbchaos binary, for proxyspec.Lbchaos.
func Installed(kind, lbchaos string) error {
	_, err := proxyBinary(kind, lbchaos)
	return err
}

// Missing returns an error wrapping ErrNotInstalled that says how to
// install it when what spec needs is not installed here: its proxy, or for
// nginx's +stream nginx's stream module; lbchaos is the lbchaos binary,
// for proxyspec.Lbchaos. Any other problem of spec is Check's, and nil
// here.
func Missing(spec, lbchaos string) error {
	ps, err := proxyspec.Parse(spec)
	if err != nil {
		return nil
	}
	if _, err := proxyBinary(ps.Kind, lbchaos); errors.Is(err, ErrNotInstalled) {
		return err
	}
	if ps.Kind == proxyspec.Nginx && ps.ConnLevel() {
		if _, err := nginxStreamModule(); err != nil {
			return err
		}
	}
	return nil
}

// lbchaosArgs is the command line of `lbchaos proxy` under test for cfg,
// logging to accessLog. Its own timeout is longer than the client's, as
// nginx's and HAProxy's are, so that the client's timeout is what ends a
// request. It shares the machine with the load generator and the backends:
// one thread for Go code (as each nginx worker is one thread) keeps it from
// competing with them for every core.
func lbchaosArgs(cfg proxyConfig, accessLog string) []string {
	fl := lbproxy.Flags{Listen: cfg.listen, Strategy: cfg.spec.Algorithm, Timeout: OwnTimeout(cfg.timeout),
		AccessLog: accessLog, Seed: cfg.seed, Procs: 1}
	for _, u := range cfg.backends {
		fl.Backends = append(fl.Backends, u.String())
	}
	return append([]string{"proxy"}, fl.Args()...)
}

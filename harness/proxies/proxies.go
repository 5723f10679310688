// Package proxies runs real load balancers as strategies under test: nginx,
// HAProxy and lbchaos proxy (package lbproxy). It writes each one's
// configuration for the current backends, starts it in its own process
// group on a free loopback port, waits until it answers, maps what it says
// about upstreams back to instance ids, and stops it. The catalogue of
// proxy specs (what each proxy offers) is proxyspec.Parse.
package proxies

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// proxyProcess is a running proxy under test.
type proxyProcess struct {
	cfg     proxyConfig
	cmd     *exec.Cmd
	log     string // its access log: "seq upstream status" per line
	output  *tailBuffer
	exited  chan struct{}
	waitErr error
	ids     map[string]int // upstream as the proxy names it -> instance id
	stopped sync.Once
	// stopping is set as the harness begins to stop the process: an exit
	// from then on is expected (see Proxy.Exit).
	stopping atomic.Bool
}

// sbinDir is where Debian installs nginx and haproxy, which may not be on
// PATH for a user other than root.
var sbinDir = "/usr/sbin"

// proxyBinary returns the path of kind's executable, or an error that
// says how to install it.
func proxyBinary(kind, lbchaos string) (string, error) {
	switch kind {
	case proxyspec.Lbchaos:
		if lbchaos == "" {
			return "", errors.New("lbchaos proxy strategies need the lbchaos binary (live.Options.LbchaosBinary); run them from the lbchaos command")
		}
		return lbchaos, nil
	case proxyspec.Nginx, proxyspec.HAProxy, proxyspec.Caddy:
		if p, err := exec.LookPath(kind); err == nil {
			return p, nil
		}
		if p := filepath.Join(sbinDir, kind); fileExists(p) {
			return p, nil
		}
		pkg := map[string]string{proxyspec.Nginx: "nginx-light", proxyspec.HAProxy: "haproxy", proxyspec.Caddy: "caddy"}[kind]
		return "", fmt.Errorf("%s is not installed: run `make deps` (it runs `apt-get install %s`), or install %s and put it on PATH", kind, pkg, kind)
	}
	return "", fmt.Errorf("unknown proxy kind %q", kind)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// startProxy writes cfg's configuration, has the proxy check it, starts it
// and waits until it answers readyPath. On error nothing is left running.
func startProxy(ctx context.Context, cfg proxyConfig) (*proxyProcess, error) {
	bin, err := proxyBinary(cfg.spec.Kind, cfg.lbchaos)
	if err != nil {
		return nil, err
	}
	p := &proxyProcess{cfg: cfg, log: filepath.Join(cfg.dir, "access.log"), output: &tailBuffer{max: 16 << 10}, exited: make(chan struct{}), ids: map[string]int{}}
	args, err := configure(ctx, bin, cfg, p.log)
	if err != nil {
		return nil, err
	}
	for id, u := range cfg.backends {
		switch cfg.spec.Kind {
		case proxyspec.Nginx, proxyspec.Caddy:
			p.ids[u.Host] = id
		case proxyspec.HAProxy:
			p.ids["i"+strconv.Itoa(id)] = id
		case proxyspec.Lbchaos:
			p.ids[strconv.Itoa(id)] = id
		}
	}
	logFile, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = cfg.dir
	if cfg.spec.Kind == proxyspec.Caddy {
		p.cmd.Env = caddyEnv(cfg.dir)
	}
	p.cmd.Stderr = p.output
	p.cmd.Stdout = p.output
	if cfg.spec.Kind == proxyspec.HAProxy {
		p.cmd.Stdout = logFile // "log stdout": one line per request
	}
	p.cmd.SysProcAttr = proxySysProcAttr()
	// nginx's workers inherit its output: with the master killed alone
	// they hold it open, and Wait would wait for them for as long as they
	// live, so that the exit went unseen.
	p.cmd.WaitDelay = exitWaitDelay
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.spec.Kind, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// checkMessage is what a proxy's check of its configuration said, without
// HAProxy's notices (its version and path).
func checkMessage(out []byte) string {
	var lines []string
	for l := range strings.Lines(string(out)) {
		if !strings.Contains(l, "[NOTICE]") {
			lines = append(lines, strings.TrimRight(l, "\n"))
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// configure writes cfg's configuration into cfg.dir, logging requests to
// accessLog, and has the proxy (bin) check it: nginx -t, haproxy -c. It
// returns the proxy's command line. A rejection quotes the proxy.
func configure(ctx context.Context, bin string, cfg proxyConfig, accessLog string) ([]string, error) {
	var args, check []string
	var text string // the generated configuration
	switch cfg.spec.Kind {
	case proxyspec.Nginx:
		conf := filepath.Join(cfg.dir, "nginx.conf")
		text = nginxConfig(cfg, accessLog)
		if cfg.spec.ConnLevel() {
			module, err := nginxStreamModule()
			if err != nil {
				return nil, err
			}
			text = nginxStreamConfig(cfg, accessLog, module)
		}
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		args = []string{"-p", cfg.dir, "-c", conf, "-e", filepath.Join(cfg.dir, "error.log"), "-g", "daemon off;"}
		check = []string{"-t", "-q", "-p", cfg.dir, "-c", conf, "-e", filepath.Join(cfg.dir, "error.log")}
	case proxyspec.HAProxy:
		conf := filepath.Join(cfg.dir, "haproxy.cfg")
		text = haproxyConfig(cfg)
		if cfg.spec.ConnLevel() {
			text = haproxyTCPConfig(cfg)
		}
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
		args = []string{"-db", "-f", conf}
		check = []string{"-c", "-f", conf} // with -q it would not say why
	case proxyspec.Lbchaos:
		return lbchaosArgs(cfg, accessLog), nil
	case proxyspec.Caddy:
		conf := filepath.Join(cfg.dir, "caddy.json")
		b, err := caddyConfig(cfg, accessLog)
		if err != nil {
			return nil, err
		}
		text = string(b)
		if err := os.WriteFile(conf, b, 0o644); err != nil {
			return nil, err
		}
		args = []string{"run", "--config", conf}
		check = []string{"validate", "--config", conf}
	}
	chk := exec.CommandContext(ctx, bin, check...)
	if cfg.spec.Kind == proxyspec.Caddy {
		chk.Env = caddyEnv(cfg.dir)
	}
	out, err := chk.CombinedOutput()
	if err != nil {
		msg := checkMessage(out)
		if t := cfg.file; t != nil {
			return nil, fmt.Errorf("%s rejected the configuration generated from %s (its lines start at line %d of the generated file): %s",
				cfg.spec.Kind, t.path, fileLine(text, t.path), msg)
		}
		return nil, fmt.Errorf("%s rejected its generated configuration (in %s): %s", cfg.spec.Kind, cfg.dir, msg)
	}
	return args, nil
}

// waitReady polls readyPath until the proxy answers, it exits, or 10 s pass.
func (p *proxyProcess) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p.cfg.spec.ConnLevel() {
			// It has no answer of its own: that it accepts connections
			// and is still running after a moment (a port taken by
			// another process also accepts them) is all there is to see.
			if dialable(p.cfg.listen) {
				select {
				case <-p.exited:
				case <-time.After(100 * time.Millisecond):
					return nil
				}
			}
		} else if resp, err := client.Get("http://" + p.cfg.listen + readyPath); err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it answered on %s (%v): %s", p.cfg.spec.Kind, p.cfg.listen, p.waitErr, p.diagnostics())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer on %s within 10 s: %s", p.cfg.spec.Kind, p.cfg.listen, p.diagnostics())
		}
	}
}

// diagnostics is what the proxy said: its output and error log.
func (p *proxyProcess) diagnostics() string {
	msg := strings.TrimSpace(p.output.String())
	if b, err := os.ReadFile(filepath.Join(p.cfg.dir, "error.log")); err == nil && len(bytes.TrimSpace(b)) > 0 {
		msg = strings.TrimSpace(msg + "\n" + string(b))
	}
	if msg == "" {
		return "no output"
	}
	return msg
}

// exitWaitDelay is how long after the proxy's process exits its output
// is still read, from children that hold it, before the exit is reported.
const exitWaitDelay = time.Second

// stop ends the proxy: a graceful signal (so that it flushes its access
// log), then SIGKILL after 5 s. It waits until the process is gone. It is
// idempotent; the proxy's directory is removed by its starter.
func (p *proxyProcess) stop() { p.stopped.Do(p.terminate) }

func (p *proxyProcess) terminate() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.stopping.Store(true)
	// Graceful stops, so that every request is logged before the exit:
	// nginx's SIGQUIT and HAProxy's SIGUSR1 (soft stop) finish open
	// requests and flush the log; lbchaos proxy flushes on SIGTERM.
	sig := syscall.SIGTERM
	switch p.cfg.spec.Kind {
	case proxyspec.Nginx:
		sig = syscall.SIGQUIT
	case proxyspec.HAProxy:
		sig = syscall.SIGUSR1
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		killGroup(p.cmd.Process.Pid)
		<-p.exited
	}
	// nginx's workers are its children: make sure none outlives it.
	killGroup(p.cmd.Process.Pid)
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

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
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

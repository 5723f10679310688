package proxies

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

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

// ErrNotInstalled is what Check and Installed wrap when the proxy (or
// the nginx module it needs) is not installed on this machine.
var ErrNotInstalled = errors.New("not installed")

// proxyBinary returns the path of kind's executable, or an error that
// says how to install it (wrapping ErrNotInstalled).
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
		return "", fmt.Errorf("%s is %w: run `make deps` (it runs `apt-get install %s`), or install %s and put it on PATH", kind, ErrNotInstalled, pkg, kind)
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

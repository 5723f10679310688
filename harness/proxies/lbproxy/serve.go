package lbproxy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// Flags is the command line of `lbchaos proxy`. The command parses it
// (Bind), and the harness writes it when it starts a proxy under test
// (Args): one definition ties the two together.
type Flags struct {
	Listen    string
	Strategy  string
	Backends  []string // base URLs; instance ids follow the order
	Timeout   time.Duration
	AccessLog string // file path; "" = none
	Seed      uint64
	Procs     int // GOMAXPROCS; 0 = all CPUs
}

// DefaultFlags are the command's defaults.
var DefaultFlags = Flags{Listen: "127.0.0.1:8080", Strategy: "p2c", Timeout: 30 * time.Second, Seed: 1}

// backendList collects the repeated --backend flag.
type backendList struct{ urls *[]string }

func (b backendList) String() string {
	if b.urls == nil {
		return ""
	}
	return strings.Join(*b.urls, ",")
}

func (b backendList) Set(v string) error { *b.urls = append(*b.urls, v); return nil }

// Bind defines the command's flags on fs, with f's values as defaults,
// writing into f.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.Listen, "listen", f.Listen, "address to listen on")
	fs.StringVar(&f.Strategy, "strategy", f.Strategy, "built-in strategy spec, e.g. p2c+eject(consecutive=5)")
	fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "cut off a backend request after this long, body included; 0 = never")
	fs.StringVar(&f.AccessLog, "access-log", f.AccessLog, "write one line per request (X-Vegeta-Seq, instance id, status) to this file")
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "seed of the strategy's random choices")
	fs.IntVar(&f.Procs, "procs", f.Procs, "CPUs that run Go code at once (GOMAXPROCS); 0 = all")
	fs.Var(backendList{&f.Backends}, "backend", "backend base URL, e.g. http://127.0.0.1:9001 (repeat; instance ids follow the order)")
}

// Args returns the arguments after `lbchaos proxy` that Bind parses back
// into f.
func (f Flags) Args() []string {
	args := []string{
		"--listen", f.Listen,
		"--strategy", f.Strategy,
		"--timeout", f.Timeout.String(),
		"--seed", strconv.FormatUint(f.Seed, 10),
		"--procs", strconv.Itoa(f.Procs),
	}
	if f.AccessLog != "" {
		args = append(args, "--access-log", f.AccessLog)
	}
	for _, b := range f.Backends {
		args = append(args, "--backend", b)
	}
	return args
}

// Config checks f and returns the proxy's configuration. The access log
// is not opened here: Serve opens it. Each error names its flag.
func (f Flags) Config() (Config, error) {
	cfg := Config{Strategy: f.Strategy, Timeout: f.Timeout, Seed: f.Seed}
	for i, b := range f.Backends {
		u, err := url.Parse(b)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return cfg, fmt.Errorf("--backend %d: %q is not an http://host:port URL", i+1, b)
		}
		cfg.Backends = append(cfg.Backends, u)
	}
	if len(cfg.Backends) == 0 {
		return cfg, errors.New("--backend: give at least one backend URL")
	}
	if f.Timeout < 0 {
		return cfg, fmt.Errorf("--timeout: must be >= 0, got %v", f.Timeout)
	}
	if f.Procs < 0 {
		return cfg, fmt.Errorf("--procs: must be >= 0, got %d", f.Procs)
	}
	return cfg, nil
}

// ConfigError is Serve's error for a configuration that cannot run (a bad
// strategy or backend, an access log that cannot be created), as opposed
// to a failure while serving.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Serve runs the proxy f describes on f.Listen until ctx is done, then
// shuts down: it stops accepting, lets requests in progress finish for up
// to 5 s, stops the health checks and flushes the access log. logw, when
// not nil, receives one line at start. Setting GOMAXPROCS (f.Procs) is the
// caller's: it is the process's.
func Serve(ctx context.Context, f Flags, logw io.Writer) error {
	cfg, err := f.Config()
	if err != nil {
		return &ConfigError{err}
	}
	if f.AccessLog != "" {
		lf, err := os.Create(f.AccessLog)
		if err != nil {
			return &ConfigError{fmt.Errorf("--access-log: %w", err)}
		}
		defer lf.Close()
		cfg.AccessLog = lf
	}
	p, err := New(cfg)
	if err != nil {
		return &ConfigError{fmt.Errorf("--strategy/--backend: %w", err)}
	}
	defer p.Close()
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.Listen, err)
	}
	// HTTP/1.1 and h2c (prior knowledge), as an instance takes them: a
	// client of protocol h2c reaches the proxy as it would an instance.
	srv := &http.Server{Handler: p, Protocols: faultyserver.Protocols(), ReadHeaderTimeout: 10 * time.Second}
	if logw != nil {
		fmt.Fprintf(logw, "lbchaos proxy: %s over %d backends on http://%s (stats: /_lbchaos/stats, metrics: %s)\n", f.Strategy, len(cfg.Backends), ln.Addr(), MetricsPath)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	}
}

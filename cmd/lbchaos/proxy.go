package main

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
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/harness"
)

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func cmdProxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("lbchaos proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		listen    = fs.String("listen", "127.0.0.1:8080", "address to listen on")
		strategy  = fs.String("strategy", "p2c", "built-in strategy spec, e.g. p2c+eject(consecutive=5)")
		timeout   = fs.Duration("timeout", 30*time.Second, "cut off a backend request after this long, body included; 0 = never")
		accessLog = fs.String("access-log", "", "write one line per request (X-Vegeta-Seq, instance id, status) to this file")
		seed      = fs.Uint64("seed", 1, "seed of the strategy's random choices")
		procs     = fs.Int("procs", 0, "CPUs that run Go code at once (GOMAXPROCS); 0 = all")
		backends  multiFlag
	)
	fs.Var(&backends, "backend", "backend base URL, e.g. http://127.0.0.1:9001 (repeat; instance ids follow the order)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: lbchaos proxy --listen ADDR --strategy SPEC --backend URL [--backend URL ...]\n\n"+
			"Serves a built-in strategy as an HTTP reverse proxy. Admin: GET /_lbchaos/stats (per backend), GET /_lbchaos/ready.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := splitPositional(fs, args)
	if err != nil {
		return &exitError{2, err}
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("proxy takes no arguments, got %q", pos)}
	}
	cfg := harness.ProxyServerConfig{Strategy: *strategy, Timeout: *timeout, Seed: *seed}
	for i, b := range backends {
		u, err := url.Parse(b)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return &exitError{2, fmt.Errorf("--backend %d: %q is not an http://host:port URL", i+1, b)}
		}
		cfg.Backends = append(cfg.Backends, u)
	}
	if len(cfg.Backends) == 0 {
		return &exitError{2, errors.New("--backend: give at least one backend URL")}
	}
	if *timeout < 0 {
		return &exitError{2, fmt.Errorf("--timeout: must be >= 0, got %v", *timeout)}
	}
	if *accessLog != "" {
		f, err := os.Create(*accessLog)
		if err != nil {
			return &exitError{2, fmt.Errorf("--access-log: %w", err)}
		}
		defer f.Close()
		cfg.AccessLog = f
	}
	// A proxy's heap is small and its garbage per request steady: collect
	// less often, so that less of its CPU goes to the collector.
	debug.SetGCPercent(400)
	if *procs < 0 {
		return &exitError{2, fmt.Errorf("--procs: must be >= 0, got %d", *procs)}
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	p, err := harness.NewProxyServer(cfg)
	if err != nil {
		return &exitError{2, fmt.Errorf("--strategy/--backend: %w", err)}
	}
	defer p.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return &exitError{1, fmt.Errorf("--listen %s: %w", *listen, err)}
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "lbchaos proxy: %s over %d backends on http://%s (stats: /_lbchaos/stats)\n", *strategy, len(cfg.Backends), ln.Addr())
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

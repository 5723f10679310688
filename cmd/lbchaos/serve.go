package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lbchaos/lbchaos/faultyserver"
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("lbchaos serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := faultyserver.DefaultFlags
	f.Bind(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: lbchaos serve [flags]\n\nRuns one fake backend instance, or with --upstream a fault sidecar in front of a real HTTP or gRPC service; one port speaks HTTP/1.1, h2c and gRPC (method "+faultyserver.GRPCMethod+"). Control API: GET/PUT/DELETE "+faultyserver.ControlPrefix+"fault, GET "+faultyserver.ControlPrefix+"stats, POST "+faultyserver.ControlPrefix+"reset, each with the header Authorization: Bearer <token> when the instance has a token (--token or "+faultyserver.TokenEnv+"); health: GET /healthz, open.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := splitPositional(fs, args)
	if err != nil {
		return &exitError{2, err}
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("serve takes no arguments, got %q", pos)}
	}
	if f.Token == "" {
		// From the environment, not a flag default: the usage would
		// print it.
		f.Token = os.Getenv(faultyserver.TokenEnv)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "lbchaos serve: "+format+"\n", args...) }
	if f.Upstream != "" {
		cfg, err := f.SidecarConfig()
		if err != nil {
			return &exitError{2, err}
		}
		return faultyserver.ServeSidecar(ctx, cfg, f.Listen, logf)
	}
	cfg, err := f.Config()
	if err != nil {
		return &exitError{2, err}
	}
	return faultyserver.Serve(ctx, cfg, f.Listen, logf)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/lbchaos/lbchaos/harness/proxies/lbproxy"
)

func cmdProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("proxy")
	f := lbproxy.DefaultFlags
	f.Bind(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("proxy takes no arguments, got %q", pos)}
	}
	// A proxy's heap is small and its garbage per request steady: collect
	// less often, so that less of its CPU goes to the collector.
	debug.SetGCPercent(400)
	if f.Procs > 0 {
		runtime.GOMAXPROCS(f.Procs)
	}
	// Serve checks the flags first: a bad one is a *lbproxy.ConfigError.
	if err := lbproxy.Serve(ctx, f, stderr); err != nil {
		var ce *lbproxy.ConfigError
		if errors.As(err, &ce) {
			return &exitError{2, err}
		}
		return err
	}
	return nil
}

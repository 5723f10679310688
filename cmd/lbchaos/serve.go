package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/lbchaos/lbchaos/faultyserver"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	f := faultyserver.DefaultFlags
	f.Bind(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("serve takes no arguments, got %q", pos)}
	}
	if f.Token == "" {
		// From the environment, not a flag default: the usage would
		// print it.
		f.Token = os.Getenv(faultyserver.TokenEnv)
	}
	// Like lbchaos proxy: a server's heap is small and its garbage per
	// request steady; collect less often (a GOGC in the environment wins).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
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
	if err == nil {
		// A value out of range is bad usage, as a flag that does not
		// parse is: its message names the field, which is the flag.
		if err = cfg.Validate(); err != nil {
			err = fmt.Errorf("serve: --%w", err)
		}
	}
	if err != nil {
		return &exitError{2, err}
	}
	return faultyserver.Serve(ctx, cfg, f.Listen, logf)
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lbchaos/lbchaos/harness/docker"
)

// cmdImage builds (or finds) the backend image from a static lbchaos binary.
func cmdImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lbchaos image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binary := fs.String("binary", "", "static linux lbchaos binary to put in the image (default: this executable)")
	repo := fs.String("repo", docker.BackendImageRepo, "image repository; another than "+docker.BackendImageRepo+" puts --binary (any static linux binary, e.g. your own service) in a FROM scratch image as its entry point, tagged REPO:<hash>")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("image takes no arguments, got %q", fs.Args())}
	}
	bin := *binary
	if *repo != docker.BackendImageRepo && bin == "" {
		return &exitError{2, fmt.Errorf("--repo %s: give the binary to put in the image with --binary", *repo)}
	}
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		bin = exe
	}
	if err := docker.Available(ctx); err != nil {
		return err
	}
	ref, err := docker.BuildBinaryImage(ctx, bin, *repo, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ref)
	return nil
}

// cmdClean removes every container and network lbchaos created, of any run.
func cmdClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return &exitError{2, fmt.Errorf("clean takes no arguments, got %q", args)}
	}
	if err := docker.Available(ctx); err != nil {
		fmt.Fprintf(stderr, "lbchaos clean: nothing to do: %v\n", err)
		return nil
	}
	n, err := docker.SweepAll(ctx, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d containers and networks\n", n)
	return nil
}

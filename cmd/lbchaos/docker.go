package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/kube"
	"github.com/lbchaos/lbchaos/harness/netfault"
)

// cmdImage builds (or finds) the backend image from a static lbchaos binary.
func cmdImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image")
	binary, repo := bindImage(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("image takes no arguments, got %q", pos)}
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

func bindImage(fs *flag.FlagSet) (binary, repo *string) {
	binary = fs.String("binary", "", "static linux lbchaos binary to put in the image (default: this executable)")
	repo = fs.String("repo", docker.BackendImageRepo, "image repository; another than "+docker.BackendImageRepo+" puts --binary (any static linux binary, e.g. your own service) in a FROM scratch image as its entry point, tagged REPO:<hash>")
	return binary, repo
}

// cmdClean removes every container and network lbchaos created, of any
// run, every namespace in the Kubernetes cluster a kubeconfig names, and
// every packet filter chain and rule of the network faults (loss,
// syn-drop).
func cmdClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("clean")
	kubeconfig := bindClean(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("clean takes no arguments, got %q", pos)}
	}
	var errs []error
	dockerUp := docker.Available(ctx)
	if dockerUp != nil {
		fmt.Fprintf(stderr, "lbchaos clean: Docker: nothing to do: %v\n", dockerUp)
	} else {
		n, err := docker.SweepAll(ctx, stderr)
		errs = append(errs, err)
		fmt.Fprintf(stdout, "removed %d containers and networks\n", n)
	}
	kubeUp, err := cleanKube(ctx, *kubeconfig, stdout, stderr)
	errs = append(errs, err)
	filterUp := netfault.Available()
	if filterUp != nil {
		fmt.Fprintf(stderr, "lbchaos clean: packet filter: nothing to do: lbchaos %v\n", filterUp)
	} else {
		n, err := netfault.SweepAll(stderr)
		errs = append(errs, err)
		fmt.Fprintf(stdout, "removed %d packet filter chains and rules of network faults\n", n)
	}
	if dockerUp != nil && !kubeUp && err == nil && filterUp != nil {
		fmt.Fprintln(stderr, "lbchaos clean: neither a Docker daemon, a Kubernetes cluster nor the packet filter answered; nothing was removed")
	}
	return errors.Join(errs...)
}

func bindClean(fs *flag.FlagSet) *string {
	return fs.String("kubeconfig", "", "the Kubernetes cluster whose lbchaos namespaces to delete (default: $KUBECONFIG, then ~/.kube/config)")
}

// cmdSignal is `lbchaos signal STOP|CONT`, which the kube backends' pause
// fault runs in an ephemeral container of a backend pod (an image FROM
// scratch has no kill).
func cmdSignal(args []string, stdout, stderr io.Writer) error {
	pos, err := parseArgs(newFlagSet("signal"), args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &exitError{2, fmt.Errorf("signal takes one argument, STOP or CONT, got %q", pos)}
	}
	pids, err := kube.SignalPeers("/proc", pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "lbchaos signal: SIG%s sent to %v\n", pos[0], pids)
	return nil
}

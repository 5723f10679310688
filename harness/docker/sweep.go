package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/lbchaos/lbchaos/harness/internal/owner"
)

// SweepStale removes the containers and networks labelled LabelRun whose
// LabelOwner names a process of this host that is gone (see ownerGone),
// and returns how many it removed. It never touches an object without
// LabelRun.
func SweepStale(ctx context.Context, log io.Writer) (removed int, err error) {
	return sweepWith(ctx, log, staleOnly)
}

// SweepAll removes every container and network labelled LabelRun, whoever
// created it, and returns how many it removed.
func SweepAll(ctx context.Context, log io.Writer) (removed int, err error) {
	return sweepWith(ctx, log, allRuns)
}

type sweepScope int

const (
	staleOnly sweepScope = iota
	allRuns
)

func sweepWith(ctx context.Context, log io.Writer, scope sweepScope) (int, error) {
	if log == nil {
		log = io.Discard
	}
	cli, err := newDockerClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	return sweep(ctx, cli, log, scope)
}

func sweep(ctx context.Context, cli client.APIClient, log io.Writer, scope sweepScope) (int, error) {
	match := func(map[string]string) bool { return true }
	if scope == staleOnly {
		host, err := os.Hostname()
		if err != nil {
			return 0, fmt.Errorf("sweep: %w", err)
		}
		match = func(labels map[string]string) bool { return owner.Gone(labels[LabelOwner], host) }
	}
	n, err := removeLabelled(ctx, cli, log, match)
	if n > 0 {
		fmt.Fprintf(log, "docker: removed %d containers and networks of earlier runs\n", n)
	}
	return n, err
}

// removalInProgress reports the engine's answer when another process (a
// concurrent run's sweep) is already removing the container.
func removalInProgress(err error) bool {
	return strings.Contains(err.Error(), "already in progress")
}

// removeLabelled force-removes the containers, then the networks, that
// carry LabelRun and satisfy match, and returns how many it removed. An
// object already gone counts as neither removed nor failed.
func removeLabelled(ctx context.Context, cli client.APIClient, log io.Writer, match func(labels map[string]string) bool) (int, error) {
	filter := client.Filters{}.Add("label", LabelRun)
	ctrs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	n := 0
	for _, c := range ctrs.Items {
		if _, ok := c.Labels[LabelRun]; !ok || !match(c.Labels) {
			continue
		}
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			n++
			fmt.Fprintf(log, "docker: removed container %.12s (run %s, owner %s)\n", c.ID, c.Labels[LabelRun], c.Labels[LabelOwner])
		case cerrdefs.IsNotFound(err), removalInProgress(err):
		default:
			errs = append(errs, fmt.Errorf("remove container %.12s: %w", c.ID, err))
		}
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return n, errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, nw := range nets.Items {
		if _, ok := nw.Labels[LabelRun]; !ok || !match(nw.Labels) {
			continue
		}
		_, err := cli.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{})
		switch {
		case err == nil:
			n++
			fmt.Fprintf(log, "docker: removed network %s (run %s, owner %s)\n", nw.Name, nw.Labels[LabelRun], nw.Labels[LabelOwner])
		case cerrdefs.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("remove network %s: %w", nw.Name, err))
		}
	}
	return n, errors.Join(errs...)
}

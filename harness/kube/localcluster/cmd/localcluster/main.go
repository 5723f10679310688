// Command localcluster is what `make kube-up`, `make kube-down` and
// `make kube-load` run: a real single-node Kubernetes on this machine (see
// package localcluster).
//
//	localcluster up [--image REF]...   # prints KUBECONFIG=<path> as its last line
//	localcluster down                  # exits non-zero when the host differs from before
//	localcluster load REF...           # imports Docker images into the running cluster
//	localcluster status                # the components and their RSS
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
)

type images []string

func (i *images) String() string { return strings.Join(*i, ",") }
func (i *images) Set(v string) error {
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		*i = append(*i, s)
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	verb := os.Args[1]
	fs := flag.NewFlagSet(verb, flag.ExitOnError)
	version := fs.String("version", localcluster.DefaultVersion, "Kubernetes release to build and run")
	cacheDir := fs.String("cache-dir", "", "where built binaries and unpacked packages are kept (default ${XDG_CACHE_HOME:-$HOME/.cache}/lbchaos/kube/<version>)")
	stateDir := fs.String("state-dir", localcluster.DefaultStateDir, "the running cluster's files: record, logs, certificates, data")
	goBin := fs.String("go", "go", "the go command that builds the components")
	proxyMode := fs.String("proxy-mode", localcluster.DefaultProxyMode, "kube-proxy's mode: iptables or nftables (this kernel has no IPVS)")
	var imgs images
	fs.Var(&imgs, "image", "Docker image to import into the cluster (repeatable, or comma-separated)")
	fs.Parse(os.Args[2:])
	imgs = append(imgs, fs.Args()...)
	if *cacheDir == "" {
		*cacheDir = localcluster.DefaultCacheDir(*version)
	}
	gb, err := exec.LookPath(*goBin)
	if err != nil && verb == "up" {
		fail(fmt.Errorf("--go %s: %w", *goBin, err))
	}
	o := localcluster.Options{
		Layout:    localcluster.Layout{Version: *version, CacheDir: *cacheDir, StateDir: *stateDir},
		Ports:     localcluster.DefaultPorts,
		GoBin:     gb,
		Images:    imgs,
		ProxyMode: *proxyMode,
		Log:       os.Stderr,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch verb {
	case "up":
		kc, err := localcluster.Up(ctx, o)
		if err != nil {
			fail(err)
		}
		fmt.Printf("KUBECONFIG=%s\n", kc)
	case "down":
		err := localcluster.Down(ctx, o)
		if errors.Is(err, localcluster.ErrHostDiffers) {
			os.Exit(1)
		}
		if err != nil {
			fail(err)
		}
	case "load":
		if err := localcluster.Load(ctx, o); err != nil {
			fail(err)
		}
	case "status":
		o.Log = os.Stdout
		if err := localcluster.Status(o); err != nil {
			fail(err)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: localcluster up|down|load|status [--version v1.34.4] [--state-dir DIR] [--cache-dir DIR] [--image REF]... [REF...]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "kube: %v\n", err)
	os.Exit(1)
}

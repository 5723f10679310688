package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FetchPackages puts etcd and the CNI plugins from Debian's packages into
// the cache: `apt-get download` and `dpkg -x`, never an install, which
// would start an etcd service on the host.
func FetchPackages(ctx context.Context, l Layout, log io.Writer) error {
	pkgs := []struct{ name, dir, probe string }{
		{"etcd-server", filepath.Join(l.CacheDir, "etcd"), l.EtcdBin()},
		{"containernetworking-plugins", filepath.Join(l.CacheDir, "cni"), filepath.Join(l.CNIBinDir(), "bridge")},
	}
	for _, p := range pkgs {
		if _, err := os.Stat(p.probe); err == nil {
			continue
		}
		if err := os.MkdirAll(l.DebDir(), 0o755); err != nil {
			return err
		}
		deb, err := downloadDeb(ctx, l.DebDir(), p.name, log)
		if err != nil {
			return err
		}
		// A directory of this call's own, so that two kube-ups sharing the
		// cache do not unpack into each other's.
		tmp, err := os.MkdirTemp(filepath.Dir(p.dir), filepath.Base(p.dir)+".tmp-")
		if err == nil {
			err = os.Chmod(tmp, 0o755) // MkdirTemp's 0700 would stay on the unpacked tree
		}
		if err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, "dpkg", "-x", deb, tmp).CombinedOutput(); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("dpkg -x %s: %v: %s", deb, err, out)
		}
		os.RemoveAll(p.dir)
		if err := os.Rename(tmp, p.dir); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		if _, err := os.Stat(p.probe); err != nil {
			return fmt.Errorf("package %s has no %s", p.name, p.probe)
		}
		fmt.Fprintf(log, "kube-up: %s unpacked into %s\n", p.name, p.dir)
	}
	return nil
}

func downloadDeb(ctx context.Context, dir, name string, log io.Writer) (string, error) {
	for attempt := 0; ; attempt++ {
		cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", name)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if attempt > 0 || !strings.Contains(string(out), "Unable to locate") {
			return "", fmt.Errorf("apt-get download %s: %v: %s", name, err, out)
		}
		// A machine whose package lists were never fetched.
		fmt.Fprintf(log, "kube-up: apt-get update (the package lists do not know %s)\n", name)
		if out, err := exec.CommandContext(ctx, "apt-get", "update", "-qq").CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get update: %v: %s", err, out)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, name+"_*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("apt-get download %s left no .deb in %s", name, dir)
	}
	return debs[len(debs)-1], nil
}

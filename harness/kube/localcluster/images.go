package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PauseRepo is the repository of the locally built sandbox image.
const PauseRepo = "lbchaos-kube-pause"

// pausePkg is the pause program, built from this module.
const pausePkg = "github.com/lbchaos/lbchaos/harness/kube/localcluster/pause"

// BuildPauseImage builds the pause program statically and puts it in a
// FROM scratch image tagged PauseRepo:<hash of the binary>, unless Docker
// has that image already. It returns the reference.
func BuildPauseImage(ctx context.Context, l Layout, goBin string, log io.Writer) (string, error) {
	dir := filepath.Join(l.CacheDir, "pause")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	build := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "pause"), pausePkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the pause program: %v: %s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "pause"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(bin)
	ref := PauseRepo + ":" + hex.EncodeToString(sum[:6])
	if exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil {
		return ref, nil
	}
	df := "FROM scratch\nCOPY pause /pause\nENTRYPOINT [\"/pause\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", ref, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build %s: %v: %s", ref, err, out)
	}
	fmt.Fprintf(log, "kube-up: built the sandbox image %s\n", ref)
	return ref, nil
}

// ImportImages copies Docker images into the cluster's containerd (the
// k8s.io namespace the CRI plugin serves): docker save | ctr images import.
func ImportImages(ctx context.Context, l Layout, refs []string, log io.Writer) error {
	for _, ref := range refs {
		save := exec.CommandContext(ctx, "docker", "save", ref)
		imp := exec.CommandContext(ctx, "ctr", "--address", l.ContainerdSocket(), "--namespace", "k8s.io",
			"images", "import", "--snapshotter", "native", "-")
		pipe, err := save.StdoutPipe()
		if err != nil {
			return err
		}
		imp.Stdin = pipe
		var saveErr, impOut strings.Builder
		save.Stderr = &saveErr
		imp.Stdout, imp.Stderr = &impOut, &impOut
		if err := save.Start(); err != nil {
			return fmt.Errorf("docker save %s: %w", ref, err)
		}
		ierr := imp.Run()
		serr := save.Wait()
		if serr != nil {
			return fmt.Errorf("docker save %s: %v: %s", ref, serr, saveErr.String())
		}
		if ierr != nil {
			return fmt.Errorf("ctr images import %s: %v: %s", ref, ierr, impOut.String())
		}
		fmt.Fprintf(log, "kube-up: image %s imported\n", ref)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness"
)

func TestFormatVersion(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
	tests := []struct {
		name               string
		bi                 *debug.BuildInfo
		ldRev, ldAt, ldMod string
		want               string
	}{
		{name: "no build info", want: harness.Version},
		{name: "go test", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: harness.Version},
		{name: "go install at a tag", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, want: "v1.2.0"},
		{name: "go build in a checkout",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201160000-1a2b3c4d5e6f"}, Settings: vcs(rev, "2026-12-01T16:00:00Z", "false")},
			want: "v0.0.0-20261201160000-1a2b3c4d5e6f (revision 1a2b3c4d5e6f, 2026-12-01T16:00:00Z)"},
		{name: "go build with changes",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201160000-1a2b3c4d5e6f+dirty"}, Settings: vcs(rev, "2026-12-01T16:00:00Z", "true")},
			want: "v0.0.0-20261201160000-1a2b3c4d5e6f+dirty (revision 1a2b3c4d5e6f, 2026-12-01T16:00:00Z, modified)"},
		{name: "vcs without a module version",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-12-01T16:00:00Z", "true")},
			want: "devel (revision 1a2b3c4d5e6f, 2026-12-01T16:00:00Z, modified)"},
		{name: "revision from the linker",
			bi:    &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			ldRev: rev, ldAt: "2026-12-01T16:00:00Z", ldMod: "true",
			want: "devel (revision 1a2b3c4d5e6f, 2026-12-01T16:00:00Z, modified)"},
		{name: "build info before the linker's",
			bi:    &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-12-01T16:00:00Z", "false")},
			ldRev: "ffffffffffffffff", ldAt: "2020-01-01T00:00:00Z",
			want: "devel (revision 1a2b3c4d5e6f, 2026-12-01T16:00:00Z)"},
		{name: "short revision", bi: &debug.BuildInfo{}, ldRev: "abc123", want: "devel (revision abc123)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.bi, tt.ldRev, tt.ldAt, tt.ldMod); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		out, errOut, err := runCLI(t, context.Background(), args...)
		if err != nil || errOut != "" {
			t.Fatalf("%q: %v\n%s", args, err, errOut)
		}
		if want := "lbchaos " + version() + "\n"; out != want {
			t.Errorf("%q printed %q, want %q", args, out, want)
		}
	}
}

// TestBuiltBinaryPrintsRevision builds lbchaos as the Makefile does, into a
// temporary directory, and checks that --version names the checkout's
// revision, as does a run's summary. A plain go build records it too when
// the checkout is an ordinary one (the go command does not recognise a git
// worktree, whose .git is a file).
func TestBuiltBinaryPrintsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v)", err)
	}
	want := "(revision " + string(head[:12])
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	check := func(t *testing.T, bin string) {
		// Help is no error; an unknown command is a usage error.
		help, err := exec.Command(bin, "run", "--help").Output()
		if err != nil || !strings.HasPrefix(string(help), "Usage: lbchaos run NAME|FILE") {
			t.Errorf("run --help: %v, printed\n%s", err, help)
		}
		var ee *exec.ExitError
		if err := exec.Command(bin, "help", "nosuch").Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("help nosuch: %v, want exit status 2", err)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(out), "lbchaos ") || !strings.Contains(string(out), want) {
			t.Errorf("--version printed %q, want it to contain %q", out, want)
		}
		sum := filepath.Join(t.TempDir(), "sim")
		if out, err := exec.Command(bin, "run", "fast-fail", "--engine", "sim", "--duration", "1s", "--rate", "100", "--quiet", "--out", sum).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if v := readSummary(t, sum).Version; !strings.Contains(v, want) {
			t.Errorf("summary's lbchaos_version %q, want it to contain %q", v, want)
		}
		md, err := os.ReadFile(filepath.Join(sum, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md does not show the version %q", want)
		}
	}
	t.Run("make build", func(t *testing.T) {
		bin := filepath.Join(dir, "lbchaos-make")
		if out, err := exec.Command("make", "-C", root, "build", "BIN="+bin).CombinedOutput(); err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
		check(t, bin)
	})
	t.Run("go build", func(t *testing.T) {
		if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
			t.Skip("a git worktree: the go command records no VCS state")
		}
		bin := filepath.Join(dir, "lbchaos-go")
		build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/lbchaos")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		check(t, bin)
	})
}

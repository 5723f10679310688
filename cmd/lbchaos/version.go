package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/lbchaos/lbchaos/harness"
)

// The VCS state of the build, for binaries whose build info has none: the
// go command records none with -buildvcs=false or in a git worktree (it
// looks for a .git directory). The Makefile sets them with
// -ldflags "-X main.vcsRevision=... -X main.vcsTime=... -X main.vcsModified=true".
var (
	vcsRevision string
	vcsTime     string
	vcsModified string
)

// version is this binary's version, as lbchaos version prints it and
// summaries record it.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return formatVersion(bi, vcsRevision, vcsTime, vcsModified)
}

// formatVersion formats a build's version: the main module's version when
// it is one (go install ...@v1.2.0; since Go 1.24 go build in a checkout
// also stamps a pseudo-version), then in parentheses the VCS revision
// (12 digits), its commit time and "modified" when the build had
// uncommitted changes, from the build info's vcs.* settings or else from
// rev, at and modified (the linker's). With neither it is harness.Version.
//
//	v0.0.0-20261201160000-1a2b3c4d5e6f+dirty (revision 1a2b3c4d5e6f, 2026-12-01T16:00:00Z, modified)
func formatVersion(bi *debug.BuildInfo, rev, at, modified string) string {
	var v string
	if bi != nil {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v = mv
		}
		var r, t, m string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				r = s.Value
			case "vcs.time":
				t = s.Value
			case "vcs.modified":
				m = s.Value
			}
		}
		if r != "" {
			rev, at, modified = r, t, m
		}
	}
	if rev == "" {
		if v == "" {
			return harness.Version
		}
		return v
	}
	if v == "" {
		v = "devel"
	}
	info := []string{"revision " + rev[:min(12, len(rev))]}
	if at != "" {
		info = append(info, at)
	}
	if modified == "true" {
		info = append(info, "modified")
	}
	return fmt.Sprintf("%s (%s)", v, strings.Join(info, ", "))
}

// cmdVersion is lbchaos version and lbchaos --version.
func cmdVersion(args []string, stdout io.Writer) error {
	pos, err := parseArgs(newFlagSet("version"), args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{2, fmt.Errorf("version takes no arguments, got %q", pos)}
	}
	fmt.Fprintln(stdout, "lbchaos", version())
	return nil
}

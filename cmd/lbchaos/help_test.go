package main

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
)

// TestMain lets a test run this test binary as lbchaos itself: with
// LBCHAOS_TEST_MAIN=1 it is the command, not the tests (the shell
// completion calls "lbchaos list").
func TestMain(m *testing.M) {
	if os.Getenv("LBCHAOS_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCommandHelpBothWays checks that every command answers --help, -h and
// lbchaos help COMMAND alike, with its own usage on stdout and exit status
// 0, and that its usage lists every flag the command accepts.
func TestCommandHelpBothWays(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			want, errOut, err := runCLI(t, context.Background(), "help", c.name)
			if err != nil || errOut != "" {
				t.Fatalf("help %s: %v\n%s", c.name, err, errOut)
			}
			if !strings.HasPrefix(want, "Usage: lbchaos "+c.name) {
				t.Errorf("help %s does not start with its synopsis:\n%s", c.name, want)
			}
			if first := strings.Fields(c.about)[0]; !strings.Contains(want, first) {
				t.Errorf("help %s lacks its description:\n%s", c.name, want)
			}
			c.flagSet().VisitAll(func(f *flag.Flag) {
				if !strings.Contains(want, "\n  --"+f.Name+" ") && !strings.Contains(want, "\n  --"+f.Name+"\n") {
					t.Errorf("help %s does not list --%s:\n%s", c.name, f.Name, want)
				}
			})
			for _, h := range []string{"--help", "-h", "-help"} {
				// Flags before the operands and after them alike.
				for _, args := range [][]string{{c.name, h}, {c.name, "x", h}} {
					out, errOut, err := runCLI(t, context.Background(), args...)
					if err != nil || errOut != "" {
						t.Errorf("%q: %v\n%s", args, err, errOut)
					}
					if out != want {
						t.Errorf("%q printed\n%s\nwant\n%s", args, out, want)
					}
				}
			}
		})
	}
}

func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}} {
		out, errOut, err := runCLI(t, context.Background(), args...)
		if err != nil || errOut != "" {
			t.Fatalf("%q: %v\n%s", args, err, errOut)
		}
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c.name+" ") {
				t.Errorf("%q does not list %s:\n%s", args, c.name, out)
			}
		}
	}
	// Without a command the usage goes to stderr, and it is a usage error.
	out, errOut, err := runCLI(t, context.Background())
	if exitCode(err) != 2 || out != "" || !strings.Contains(errOut, "\n  run ") {
		t.Errorf("no command: exit %d, stdout %q, stderr\n%s", exitCode(err), out, errOut)
	}
}

func TestHelpErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"help", "nosuch"}, `unknown command "nosuch" (lbchaos help lists the commands)`},
		{"two commands", []string{"help", "run", "serve"}, "help takes one command, got 2 (run serve)"},
		{"unknown flag", []string{"report", "--nosuch", "dir"}, "report: unknown flag --nosuch (see lbchaos help report)"},
		{"unknown run flag", []string{"run", "baseline", "--colour", "red"}, "run: unknown flag --colour (see lbchaos help run)"},
		{"version with an argument", []string{"version", "now"}, `version takes no arguments, got ["now"]`},
		{"list with an argument", []string{"list", "all"}, `list takes no argument (the experiments) or one of experiments, strategies, sweeps; got ["all"]`},
		{"completion without a shell", []string{"completion"}, "completion takes one shell, bash, zsh or fish, got []"},
		{"completion for another shell", []string{"completion", "tcsh"}, `completion takes one shell, bash, zsh or fish, got ["tcsh"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCLI(t, context.Background(), tt.args...)
			if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("exit %d, error %v\nwant 2, %q", exitCode(err), err, tt.want)
			}
			if out != "" {
				t.Errorf("stdout: %q", out)
			}
		})
	}
}

// TestOperandsAfterDoubleDash checks that --help after "--" is an operand:
// report then looks for a run directory named --help.
func TestOperandsAfterDoubleDash(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, _, err := runCLI(t, context.Background(), "report", "--", "--help")
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "--help/summary.json") && !strings.Contains(err.Error(), "open --help") {
		t.Errorf("report -- --help: exit %d, %v; want it to look for the run --help", exitCode(err), err)
	}
}

// TestRunHelpGroupsEveryFlag: lbchaos run --help lists its flags by topic,
// load first, each flag once, and none is left under "Other flags" (a new
// flag joins a group in runFlagGroups).
func TestRunHelpGroupsEveryFlag(t *testing.T) {
	out, _, err := runCLI(t, context.Background(), "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, " flags:") {
			order = append(order, strings.TrimSuffix(line, " flags:"))
		}
	}
	want := []string{"Load", "Backends", "Output", "Simulation", "Kubernetes (--backends kube)"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("groups %q, want %q", order, want)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "  --"); ok {
			name, _, _ = strings.Cut(name, " ")
			seen[name]++
		}
	}
	lookup("run").flagSet().VisitAll(func(f *flag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("--%s is listed %d times", f.Name, seen[f.Name])
		}
	})
	for _, g := range runFlagGroups {
		for _, name := range g.names {
			if lookup("run").flagSet().Lookup(name) == nil {
				t.Errorf("group %q names --%s, which run does not have", g.title, name)
			}
		}
	}
	if !strings.Contains(out, "Load flags:\n  --duration duration\n") {
		t.Errorf("the common flags do not come first:\n%s", out)
	}
}

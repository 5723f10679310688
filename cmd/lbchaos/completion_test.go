package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	out, errOut, err := runCLI(t, context.Background(), "completion", shell)
	if err != nil || errOut != "" {
		t.Fatalf("completion %s: %v\n%s", shell, err, errOut)
	}
	return out
}

// TestCompletionNamesEveryCommandAndFlag checks each script against the
// command table: every command, and every flag of each.
func TestCompletionNamesEveryCommandAndFlag(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			script := completionScript(t, shell)
			for _, c := range commands {
				var flagWant func(name string) string
				switch shell {
				case "fish":
					if !strings.Contains(script, "__fish_use_subcommand -a "+c.name+" ") {
						t.Errorf("no command %s", c.name)
					}
					flagWant = func(name string) string { return "'__fish_seen_subcommand_from " + c.name + "' -l " + name + " " }
				default:
					if !strings.Contains(script, "\n    "+c.name+")\n") {
						t.Errorf("no case for command %s", c.name)
					}
					all, _ := c.flagsByKind()
					words := strings.Join(all, " ")
					flagWant = func(name string) string { return "--" + name }
					if !strings.Contains(script, `compgen -W "`+words+`"`) {
						t.Errorf("%s: no completion of its flags %q", c.name, words)
					}
				}
				c.flagSet().VisitAll(func(f *flag.Flag) {
					if !strings.Contains(script, flagWant(f.Name)) {
						t.Errorf("%s: flag %s missing", c.name, f.Name)
					}
				})
			}
		})
	}
}

// TestBashCompletion loads the bash script into bash and completes
// command lines with it, as bash does on TAB.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "lbchaos.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	// The script calls "${COMP_WORDS[0]}" list: this test binary, as
	// lbchaos (TestMain).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	for _, name := range []string{"mine.yaml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(files, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(files, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// complete runs the function the script registered for lbchaos with the
	// words of a command line, the cursor on the last one.
	complete := func(words ...string) string {
		t.Helper()
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1"; shift
spec=$(complete -p lbchaos) || exit 1
[[ $spec == "complete -F _lbchaos lbchaos" ]] || { echo "registered as: $spec"; exit 1; }
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
_lbchaos
printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '`, "bash", script)
		cmd.Args = append(append(cmd.Args, exe), words[1:]...)
		cmd.Dir = files
		cmd.Env = append(os.Environ(), "LBCHAOS_TEST_MAIN=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"lbchaos", "ru"}, "run"},
		{[]string{"lbchaos", "c"}, "clean compare completion"},
		{[]string{"lbchaos", "--v"}, "--version"},
		{[]string{"lbchaos", "run", "--eng"}, "--engine"},
		{[]string{"lbchaos", "run", "--engine", ""}, "real sim"},
		{[]string{"lbchaos", "run", "-backends", "d"}, "docker"},
		{[]string{"lbchaos", "run", "--duration", ""}, ""},
		{[]string{"lbchaos", "run", "--out", ""}, "runs"},
		{[]string{"lbchaos", "run", "fast-"}, "fast-fail"},
		{[]string{"lbchaos", "run", "m"}, "mine.yaml"},
		{[]string{"lbchaos", "run", "baseline", "--qu"}, "--quiet"},
		{[]string{"lbchaos", "proxy", "--st"}, "--strategy"},
		{[]string{"lbchaos", "serve", "--upstream", ""}, ""},
		{[]string{"lbchaos", "clean", "--kubeconfig", "n"}, "notes.txt"},
		{[]string{"lbchaos", "report", ""}, "runs"},
		{[]string{"lbchaos", "signal", ""}, "CONT STOP"},
		{[]string{"lbchaos", "help", "com"}, "compare completion"},
		{[]string{"lbchaos", "completion", ""}, "bash fish zsh"},
		{[]string{"lbchaos", "version", "-"}, "--help"},
		{[]string{"lbchaos", "list", ""}, "experiments strategies sweeps"},
		{[]string{"lbchaos", "run", "--strategies", "p2"}, "p2c"},
		{[]string{"lbchaos", "run", "fast-fail", "-strategies", "round-robin,least-i"}, "round-robin,least-inflight"},
		{[]string{"lbchaos", "run", "--strategies", "haproxy:l"}, "haproxy:leastconn"},
		// As readline splits haproxy:l at the colon: the reply replaces
		// only the part after it.
		{[]string{"lbchaos", "run", "--strategies", "haproxy", ":", "l"}, "leastconn"},
		{[]string{"lbchaos", "run", "--strategies", "p2c,grpc", ":", "round"}, "round_robin"},
	}
	for _, tt := range tests {
		if got := complete(tt.words...); got != tt.want {
			t.Errorf("%q completes to %q, want %q", tt.words, got, tt.want)
		}
	}
	// The experiments come from lbchaos list.
	list, _, err := runCLI(t, context.Background(), "list")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		names = append(names, strings.Fields(line)[0])
	}
	got := complete("lbchaos", "run", "")
	for _, name := range append(names, "mine.yaml", "runs") {
		if !strings.Contains(" "+got+" ", " "+name+" ") {
			t.Errorf("run completes to %q, which lacks %s", got, name)
		}
	}
	if strings.Contains(got, "notes.txt") {
		t.Errorf("run completes to %q, which offers notes.txt (not an experiment)", got)
	}
}

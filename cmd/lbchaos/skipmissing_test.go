package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/proxies"
)

// TestRunSkipMissing: a real run whose proxies are not installed names
// every one of them at once and suggests --skip-missing; with it, their
// strategies are left out, noted as skipped, and the rest run.
func TestRunSkipMissing(t *testing.T) {
	// nginx and caddy look missing, whatever this machine has.
	proxyMissing = func(strategy string) error {
		for _, kind := range []string{"nginx", "caddy"} {
			if strings.HasPrefix(strategy, kind+":") {
				return fmt.Errorf("%s is %w: install it (test)", kind, proxies.ErrNotInstalled)
			}
		}
		return nil
	}
	t.Cleanup(func() { proxyMissing = nil })
	dir := t.TempDir()
	args := func(strats, out string, more ...string) []string {
		return append([]string{"run", "fast-fail", "--backends", "process", "--duration", "1s", "--rate", "100", "--quiet",
			"--strategies", strats, "--out", filepath.Join(dir, out)}, more...)
	}
	const strats = "round-robin,nginx:round_robin,caddy:least_conn,nginx:least_conn"

	_, _, err := runCLI(t, context.Background(), args(strats, "refused")...)
	want := "strategies whose proxy is not installed (install it, or give --skip-missing to leave these strategies out and run the rest):\n" +
		"  nginx:round_robin, nginx:least_conn: nginx is not installed: install it (test)\n" +
		"  caddy:least_conn: caddy is not installed: install it (test)"
	if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, proxies.ErrNotInstalled) {
		t.Errorf("exit %d, error %v\nwant 1 and\n%s", exitCode(err), err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); err == nil {
		t.Error("a refused run wrote its output directory")
	}

	_, _, err = runCLI(t, context.Background(), args("nginx:round_robin", "none", "--skip-missing")...)
	if err == nil || !strings.Contains(err.Error(), "no strategy was measured: every one was left out (nginx:round_robin: nginx is not installed") {
		t.Errorf("every strategy left out: %v", err)
	}

	if testing.Short() {
		t.Skip("real load for a second")
	}
	out, errOut, err := runCLI(t, context.Background(), args(strats, "skipped", "--skip-missing")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	s := readSummary(t, filepath.Join(dir, "skipped"))
	if len(s.Strategies) != 1 || s.Strategies[0].Name != "round-robin" || s.Strategies[0].Requests == 0 {
		t.Fatalf("strategies %+v, want round-robin alone", s.Strategies)
	}
	for _, note := range []string{
		"nginx:round_robin: nginx is not installed: install it (test); left out of the run (--skip-missing).",
		"caddy:least_conn: caddy is not installed: install it (test); left out of the run (--skip-missing).",
		"nginx:least_conn: nginx is not installed: install it (test); left out of the run (--skip-missing).",
	} {
		if !slices.Contains(s.Notes, note) {
			t.Errorf("summary notes %q lack %q", s.Notes, note)
		}
	}
	if want := "nginx:round_robin, nginx:least_conn: nginx is not installed"; !strings.Contains(out, want) {
		t.Errorf("the run's table does not list the skipped strategies (%q):\n%s", want, out)
	}
}

package live

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies"
)

// TestMissingProxies: Check names every strategy whose proxy is missing
// at once, one line per proxy; with SkipMissing it passes, and Skip and
// Measure leave exactly those strategies out.
func TestMissingProxies(t *testing.T) {
	exp := runtest.MustExperiment(t, "missing", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [p2c, "nginx:least_conn", "haproxy:leastconn", "nginx:round_robin(max_fails=2)"]
`)
	missing := func(strategy string) error {
		kind, _, _ := strings.Cut(strategy, ":")
		if kind == "nginx" || kind == "haproxy" {
			return fmt.Errorf("%s is %w (test)", kind, proxies.ErrNotInstalled)
		}
		return nil
	}
	e := New(Options{ProxyMissing: missing})
	_, err := e.Check(exp)
	var mp *MissingProxies
	if !errors.As(err, &mp) || !errors.Is(err, proxies.ErrNotInstalled) {
		t.Fatalf("err = %v, want a *MissingProxies", err)
	}
	want := "strategies whose proxy is not installed (install it, or give --skip-missing to leave these strategies out and run the rest):\n" +
		"  nginx:least_conn, nginx:round_robin(max_fails=2): nginx is not installed (test)\n" +
		"  haproxy:leastconn: haproxy is not installed (test)"
	if err.Error() != want {
		t.Errorf("err =\n%s\nwant\n%s", err, want)
	}
	if why := e.Skip(exp, "nginx:least_conn"); why != "" {
		t.Errorf("without SkipMissing Skip says %q", why)
	}

	e = New(Options{ProxyMissing: missing, SkipMissing: true})
	if _, err := e.Check(exp); err != nil {
		t.Fatalf("with SkipMissing: %v", err)
	}
	for _, name := range exp.Strategies {
		why := e.Skip(exp, name)
		if (why != "") != (name != "p2c") {
			t.Errorf("Skip(%s) = %q", name, why)
		}
	}
	if want := "haproxy:leastconn: haproxy is not installed (test); left out of the run (--skip-missing)."; e.Skip(exp, "haproxy:leastconn") != want {
		t.Errorf("Skip = %q, want %q", e.Skip(exp, "haproxy:leastconn"), want)
	}
}

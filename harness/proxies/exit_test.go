package proxies

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
)

// TestProxyExit: a proxy killed from outside is seen to exit at once, and
// not as stopped by the harness; one stopped by Stop is.
func TestProxyExit(t *testing.T) {
	runtest.Need(t, Installed(strategies.ProxyNginx, "unused"))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)

	x, err := Start(t.Context(), "nginx:round_robin", "", []*url.URL{u}, time.Second, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	select {
	case <-x.Exited():
		t.Fatal("exited before it was killed")
	default:
	}
	killed := time.Now()
	if err := syscall.Kill(-x.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-x.Exited():
	case <-time.After(time.Second):
		t.Fatal("the exit was not seen within a second")
	}
	t.Logf("exit seen %v after the kill", time.Since(killed))
	status, stopped, log := x.Exit()
	if stopped || !strings.Contains(status, "signal: killed") || len(log) == 0 {
		t.Errorf("Exit() = %q, stopped %v, log %q; want killed, not stopped, some log", status, stopped, log)
	}

	y, err := Start(t.Context(), "nginx:round_robin", "", []*url.URL{u}, time.Second, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	y.Stop()
	if _, stopped, _ := y.Exit(); !stopped {
		t.Errorf("a proxy stopped by Stop: Exit says not stopped")
	}
}

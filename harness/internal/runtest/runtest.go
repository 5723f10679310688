// Package runtest holds what the harness packages' tests share: experiments
// written inline, the accounting invariants every measured strategy must
// hold, and the lbchaos binary built once per test binary.
package runtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// MustExperiment parses an experiment from YAML text for a test.
func MustExperiment(t testing.TB, name, body string) *experiments.Experiment {
	t.Helper()
	e, err := experiments.Parse(name+".yaml", []byte("name: "+name+"\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// StrategyByName returns the strategy of s named name, or fails the test.
func StrategyByName(t testing.TB, s *reports.Summary, name string) reports.Strategy {
	t.Helper()
	for _, st := range s.Strategies {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("strategy %q not in summary", name)
	return reports.Strategy{}
}

// CheckAccounting asserts the invariants every strategy's numbers must
// hold, whatever engine measured them: every request is on its instance or
// unattributed, in the totals and the timeline alike, and the shares and
// the error ratio agree with the instances.
func CheckAccounting(t testing.TB, st reports.Strategy) {
	t.Helper()
	var reqs, errs int64
	var share float64
	for _, in := range st.Instances {
		if len(st.Tiers) > 0 && !slices.Contains(st.Tiers[0].Instances, in.ID) {
			continue // a lower tier's: the tier above's calls (checkTiers)
		}
		reqs += in.Requests
		errs += in.Errors
		share += in.Share
		var series int64
		for _, s := range st.Timeline.Instances[in.ID].Requests {
			series += s
		}
		if series != in.Requests {
			t.Errorf("%s: instance %d: timeline has %d requests, total %d", st.Name, in.ID, series, in.Requests)
		}
	}
	checkTiers(t, st)
	var unrouted int64
	for _, n := range st.Timeline.Unrouted {
		unrouted += n
	}
	if st.Retry != nil {
		checkAttempts(t, st, reqs, share)
		return
	}
	if unrouted != st.Unattributed {
		t.Errorf("%s: timeline has %d requests that reached no instance, unattributed %d", st.Name, unrouted, st.Unattributed)
	}
	if reqs+st.Unattributed != st.Requests {
		t.Errorf("%s: instances account for %d requests (+%d unattributed), want %d", st.Name, reqs, st.Unattributed, st.Requests)
	}
	// Requests that reached no instance have no share, and every one failed.
	if want := 1 - float64(st.Unattributed)/float64(st.Requests); st.Requests > 0 && (share < want-0.001 || share > want+0.001) {
		t.Errorf("%s: instance shares add up to %v, want %v", st.Name, share, want)
	}
	wantErrRatio := float64(errs+st.Unattributed) / float64(st.Requests)
	if d := st.ErrorRatio - wantErrRatio; d > 1e-9 || d < -1e-9 {
		t.Errorf("%s: error_ratio %v, instances say %v", st.Name, st.ErrorRatio, wantErrRatio)
	}
}

// checkAttempts checks the accounting of a strategy with a retry or hedge
// policy, whose instances count attempts: reqs attempts at the instances,
// their shares adding up to share.
func checkAttempts(t testing.TB, st reports.Strategy, reqs int64, share float64) {
	t.Helper()
	var offered, attempts int64
	for b := range st.Timeline.Offered {
		offered += st.Timeline.Offered[b]
		attempts += st.Timeline.Attempts[b]
	}
	if offered != st.Requests {
		t.Errorf("%s: timeline offered %d requests, want %d", st.Name, offered, st.Requests)
	}
	if attempts != reqs {
		t.Errorf("%s: timeline has %d attempts, the instances %d", st.Name, attempts, reqs)
	}
	if st.AttemptsPerRequest == nil {
		t.Fatalf("%s: no attempts_per_request", st.Name)
	}
	if got := st.AttemptsPerRequest.Mean * float64(st.Requests); got < float64(reqs)-0.5 || got > float64(reqs)+0.5 {
		t.Errorf("%s: attempts_per_request.mean × requests = %.1f, the instances count %d attempts", st.Name, got, reqs)
	}
	if reqs > 0 && (share < 0.999 || share > 1.001) {
		t.Errorf("%s: instance shares of the attempts add up to %v, want 1", st.Name, share)
	}
	for _, in := range st.Instances {
		if in.Attempts == nil || *in.Attempts != in.Requests {
			t.Errorf("%s: instance %d: attempts %v, want its requests (%d)", st.Name, in.ID, in.Attempts, in.Requests)
		}
	}
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns a static lbchaos binary: $LBCHAOS_BIN when set, else one
// built once per test binary into a fixed path under the temporary
// directory that each build replaces. It serves as the backend image's
// entry point and as `lbchaos proxy`.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LBCHAOS_BIN"); p != "" {
		return p
	}
	binaryOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "lbchaos-harness-test")
		if binaryErr = os.MkdirAll(dir, 0o755); binaryErr != nil {
			return
		}
		tmp, err := os.MkdirTemp(dir, "build-")
		if err != nil {
			binaryErr = err
			return
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, "lbchaos")
		cmd := exec.Command("go", "build", "-o", out, "github.com/lbchaos/lbchaos/cmd/lbchaos")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			binaryErr = errors.New("go build: " + err.Error() + "\n" + string(b))
			return
		}
		binaryPath = filepath.Join(dir, "lbchaos")
		binaryErr = os.Rename(out, binaryPath)
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// Need skips the test when err says something it needs is missing (Docker,
// nginx, HAProxy), or fails it under CI=true, where .ci/run installs and
// starts everything the tests need. A nil err does nothing.
func Need(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %v", err)
	}
	t.Skip(err)
}

// ProxyLeftovers lists processes started from a proxy directory of ours.
func ProxyLeftovers(t testing.TB) []string {
	t.Helper()
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, "lbchaos-nginx-") || strings.Contains(cmd, "lbchaos-haproxy-") || strings.Contains(cmd, "lbchaos-lbchaos-") || strings.Contains(cmd, "lbchaos-caddy-") {
			found = append(found, cmd)
		}
	}
	return found
}

// checkTiers asserts a tiered strategy's tiers agree with its instances:
// each tier's requests and errors are its instances', whose shares of
// their tier add up to 1, and its requests per client request are
// requests_received over the client's requests.
func checkTiers(t testing.TB, st reports.Strategy) {
	t.Helper()
	for _, tier := range st.Tiers {
		var reqs, errs int64
		var share float64
		for _, id := range tier.Instances {
			reqs += st.Instances[id].Requests
			errs += st.Instances[id].Errors
			share += st.Instances[id].Share
		}
		if reqs != tier.RequestsReceived || errs != tier.Errors {
			t.Errorf("%s: tier %s: %d requests and %d errors, its instances %d and %d", st.Name, tier.Name, tier.RequestsReceived, tier.Errors, reqs, errs)
		}
		if reqs > 0 && (share < 0.999 || share > 1.001) {
			t.Errorf("%s: tier %s: its instances' shares add up to %v, want 1", st.Name, tier.Name, share)
		}
		if want := float64(reqs) / float64(max(st.Requests, 1)); st.Requests > 0 && (tier.PerClientRequest-want > 1e-9 || want-tier.PerClientRequest > 1e-9) {
			t.Errorf("%s: tier %s: %v per client request, want %v", st.Name, tier.Name, tier.PerClientRequest, want)
		}
	}
}

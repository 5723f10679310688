package process

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFleet starts a fleet, checks that each instance is a real server
// answering as itself with its configuration, that faults reach it, and
// that Close leaves no goroutine behind (TestMain).
func TestFleet(t *testing.T) {
	exp := runtest.MustExperiment(t, "fleet", `
duration: 1s
rate: 10
instances:
  workers: 2
  service: {dist: fixed, value: 1ms}
  groups: [{count: 2}, {count: 1, workers: 5}]
strategies: [p2c]
`)
	var p fleet.Provider = Provider{}
	fl, err := p.Start(context.Background(), fleet.Spec{Instances: exp.Instances, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	bs := fl.Backends()
	if len(bs) != 3 {
		t.Fatalf("%d backends, want 3", len(bs))
	}
	for i, b := range bs {
		if b.ID != i {
			t.Errorf("backend %d has id %d", i, b.ID)
		}
		if err := b.Control.Healthy(t.Context()); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(b.URL.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get(faultyserver.InstanceHeader); got != strconv.Itoa(i) || resp.StatusCode != 200 {
			t.Errorf("backend %d answered %d as %q", i, resp.StatusCode, got)
		}
	}
	if err := bs[2].Control.SetFault(t.Context(), faultyserver.Fail{Status: 502}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(bs[2].URL.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Errorf("under a fail fault: %d, want 502", resp.StatusCode)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fl.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := http.Get(bs[0].URL.String() + "/healthz"); err == nil {
		t.Error("a closed fleet still answers")
	}
}

// TestNoContainerFaults: in-process backends take server faults only, and
// the check says which fault and what to do.
func TestNoContainerFaults(t *testing.T) {
	exp := runtest.MustExperiment(t, "frozen", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail}}
  - {instance: 1, at: 0s, until: 500ms, fault: {mode: pause}}
strategies: [random]
`)
	err := fleet.Check(exp, Provider{})
	want := `frozen.yaml: faults[1]: mode "pause" acts on containers, which process backends do not have; run with --backends docker (or kube)`
	if err == nil || err.Error() != want {
		t.Errorf("err %v\nwant %s", err, want)
	}
}

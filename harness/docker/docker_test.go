package docker

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// requireDocker skips the test when no daemon answers, or fails it when
// CI=true.
func requireDocker(t testing.TB) {
	t.Helper()
	if err := Available(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// testLog writes each line to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newTestProvider returns a provider closed, and checked to leave nothing
// behind, at the end of the test.
func newTestProvider(t *testing.T, reuse bool) *Provider {
	t.Helper()
	requireDocker(t)
	p, err := New(t.Context(), Options{
		Binary:       runtest.Binary(t),
		StartTimeout: 20 * time.Second,
		Log:          testLog{t},
		Reuse:        reuse,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("provider close: %v", err)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("second provider close: %v", err)
		}
		if n := countRun(t, p.RunID()); n != 0 {
			t.Errorf("%d containers or networks of run %s left after Close", n, p.RunID())
		}
	})
	return p
}

// testClient returns a Docker client closed at the end of the test.
func testClient(t *testing.T) client.APIClient {
	t.Helper()
	cli, err := newDockerClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// countRun counts the containers and networks labelled with run id.
func countRun(t *testing.T, id string) int {
	t.Helper()
	cli := testClient(t)
	f := client.Filters{}.Add("label", LabelRun+"="+id)
	ctx := context.Background()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items) + len(ns.Items)
}

func testSpec(n int) fleet.Spec {
	return fleet.Spec{
		Instances: experiments.Instances{Count: n, Workers: 4, Service: faultyserver.Fixed(time.Millisecond)},
		Seed:      7,
	}
}

// get sends GET / to b and returns the answer's status and instance
// header.
func get(ctx context.Context, b fleet.Backend, timeout time.Duration) (int, string, error) {
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL.String()+"/", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(faultyserver.InstanceHeader), nil
}

func TestDockerBuildImage(t *testing.T) {
	requireDocker(t)
	bin := runtest.Binary(t)
	ctx := t.Context()
	ref, err := BuildImage(ctx, bin, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, BackendImageRepo+":") || len(ref) != len(BackendImageRepo)+1+12 {
		t.Errorf("ref %q, want %s:<12 hex digits>", ref, BackendImageRepo)
	}
	t0 := time.Now()
	again, err := BuildImage(ctx, bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("second BuildImage took %v; the image should have been reused", d)
	}
	if again != ref {
		t.Errorf("second BuildImage: %q, want %q", again, ref)
	}

	text := filepath.Join(t.TempDir(), "lbchaos")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/bin/ls", text} {
		_, err := BuildImage(ctx, bad, nil)
		if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("BuildImage(%s): %v, want an error saying how to build a static binary", bad, err)
		}
	}
}

func TestDockerFleet(t *testing.T) {
	p := newTestProvider(t, false)
	ctx := t.Context()
	fl, err := p.Start(ctx, testSpec(3))
	if err != nil {
		t.Fatal(err)
	}
	fleet := fl.(*dockerFleet)
	cli := testClient(t)

	t.Run("instances", func(t *testing.T) {
		for i, b := range fleet.Backends() {
			if b.ID != i {
				t.Errorf("backend %d has id %d", i, b.ID)
			}
			code, inst, err := get(ctx, b, 2*time.Second)
			if err != nil || code != http.StatusOK || inst != strconv.Itoa(i) {
				t.Errorf("instance %d: status %d, %s %q, err %v", i, code, faultyserver.InstanceHeader, inst, err)
			}
			if b.URL.Hostname() != "127.0.0.1" {
				t.Errorf("instance %d: URL %s, want 127.0.0.1", i, b.URL)
			}
			insp, err := cli.ContainerInspect(ctx, fleet.insts[i].ctr.GetContainerID(), client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := insp.Container
			if c.Config.Labels[LabelRun] != p.RunID() || c.Config.Labels[LabelOwner] != p.owner {
				t.Errorf("instance %d: labels %v", i, c.Config.Labels)
			}
			for port, bs := range c.NetworkSettings.Ports {
				for _, pb := range bs {
					if pb.HostIP.String() != "127.0.0.1" {
						t.Errorf("instance %d: %s published on %s, want 127.0.0.1 only", i, port, pb.HostIP)
					}
				}
			}
		}
	})

	t.Run("control", func(t *testing.T) {
		b := fleet.Backends()[1]
		if err := b.Control.SetFault(ctx, faultyserver.Fail{Status: http.StatusServiceUnavailable}); err != nil {
			t.Fatal(err)
		}
		if code, _, err := get(ctx, b, 2*time.Second); err != nil || code != http.StatusServiceUnavailable {
			t.Errorf("with a fail fault: status %d, err %v; want 503", code, err)
		}
		if err := b.Control.ClearFault(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("pause", func(t *testing.T) {
		b := fleet.Backends()[0]
		if err := fleet.Pause(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if code, _, err := get(ctx, b, 300*time.Millisecond); err == nil {
			t.Errorf("paused instance answered %d", code)
		}
		if err := fleet.Unpause(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if code, _, err := get(ctx, b, 2*time.Second); err != nil || code != http.StatusOK {
			t.Errorf("after unpause: status %d, err %v", code, err)
		}
	})

	t.Run("kill-restart", func(t *testing.T) {
		before := fleet.Backends()[2]
		if err := fleet.Kill(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if code, _, err := get(ctx, before, time.Second); err == nil {
			t.Errorf("killed instance answered %d", code)
		}
		// Backends is read while the instance restarts.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 50 {
				_ = fleet.Backends()[2].URL.String()
			}
		}()
		if err := fleet.Restart(ctx, 2); err != nil {
			t.Fatal(err)
		}
		<-done
		after := fleet.Backends()[2]
		t.Logf("instance 2: %s before the kill, %s after the restart", before.URL, after.URL)
		if err := after.Control.Healthy(ctx); err != nil {
			t.Fatal(err)
		}
		if code, inst, err := get(ctx, after, 2*time.Second); err != nil || code != http.StatusOK || inst != "2" {
			t.Errorf("after restart: status %d, instance %q, err %v", code, inst, err)
		}
	})

	t.Run("cpu", func(t *testing.T) {
		nano := func() int64 {
			insp, err := cli.ContainerInspect(ctx, fleet.insts[1].ctr.GetContainerID(), client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return insp.Container.HostConfig.NanoCPUs
		}
		if err := fleet.SetCPU(ctx, 1, 0.1); err != nil {
			t.Fatal(err)
		}
		if got := nano(); got != 1e8 {
			t.Errorf("NanoCPUs %d after SetCPU(0.1), want 1e8", got)
		}
		if err := fleet.SetCPU(ctx, 1, 0); err != nil {
			t.Fatal(err)
		}
		if got, want := nano(), int64(p.ncpu)*1e9; got != want {
			t.Errorf("NanoCPUs %d after lifting the limit, want %d", got, want)
		}
		if _, _, err := get(ctx, fleet.Backends()[1], 2*time.Second); err != nil {
			t.Error(err)
		}
	})

	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Pause(ctx, 0); err == nil {
		t.Error("Pause on a closed fleet succeeded")
	}
	if n := countRun(t, p.RunID()); n != 0 {
		t.Errorf("%d containers of run %s left after the fleet's Close", n, p.RunID())
	}
}

func TestDockerStartFailure(t *testing.T) {
	p := newTestProvider(t, false)
	spec := testSpec(2)
	spec.Workers = -1 // lbchaos serve rejects it and exits
	_, err := p.Start(t.Context(), spec)
	if err == nil {
		t.Fatal("Start with an invalid config succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "instance ") || !strings.Contains(err.Error(), "container output") {
		t.Errorf("error %q should name the instance and quote its output", err)
	}
	if n := countRun(t, p.RunID()); n != 0 {
		t.Errorf("%d containers left after a failed Start", n)
	}
}

// TestDockerReuse measures starting 10 containers against reusing them, and
// checks that a reused fleet starts clean.
func TestDockerReuse(t *testing.T) {
	p := newTestProvider(t, true)
	ctx := t.Context()
	spec := testSpec(10)

	t0 := time.Now()
	fl, err := p.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	startTime := time.Since(t0)
	fleet := fl.(*dockerFleet)
	ids := make([]string, len(fleet.insts))
	for i, in := range fleet.insts {
		ids[i] = in.ctr.GetContainerID()
	}
	dirty := func() {
		t.Helper()
		for i, b := range fleet.Backends() {
			if _, _, err := get(ctx, b, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if err := b.Control.SetFault(ctx, faultyserver.Fail{Status: 500}); err != nil {
				t.Fatal(err)
			}
			if err := fleet.SetCPU(ctx, i, 0.5); err != nil {
				t.Fatal(err)
			}
		}
		if err := fleet.Pause(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}

	dirty()
	if err := fleet.Kill(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	fl2, err := p.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	resetTime := time.Since(t0)
	t.Logf("10 containers: new ones started in %v; reused ones (1 killed, 1 paused, all CPU-limited and failing) reset in %v",
		startTime.Round(time.Millisecond), resetTime.Round(time.Millisecond))

	// Without kills, pauses and limits, as between most strategies.
	if err := fl2.Close(); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if fl2, err = p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Logf("10 reused containers without container faults reset in %v", time.Since(t0).Round(time.Millisecond))

	fleet2 := fl2.(*dockerFleet)
	cli := testClient(t)
	for i, b := range fl2.Backends() {
		if got := fleet2.insts[i].ctr.GetContainerID(); got != ids[i] {
			t.Errorf("instance %d: container %.12s, want the reused %.12s", i, got, ids[i])
		}
		st, err := b.Control.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Served != 0 || st.Fault != nil && string(st.Fault) != "null" {
			t.Errorf("instance %d: %d served, fault %s after reuse", i, st.Served, st.Fault)
		}
		insp, err := cli.ContainerInspect(ctx, ids[i], client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := insp.Container.State; s.Status != container.StateRunning {
			t.Errorf("instance %d: state %s after reuse", i, s.Status)
		}
		if got, want := insp.Container.HostConfig.NanoCPUs, int64(p.ncpu)*1e9; got != want {
			t.Errorf("instance %d: NanoCPUs %d after reuse, want %d", i, got, want)
		}
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.inst(0); err == nil {
		t.Error("the released fleet is still usable")
	}

	// A different spec gets new containers.
	if err := fl2.Close(); err != nil {
		t.Fatal(err)
	}
	spec.Count = 2
	fl3, err := p.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := countRun(t, p.RunID()); n != 2 {
		t.Errorf("%d containers of the run after a Start with another spec, want 2", n)
	}
	_ = fl3 // closed by the provider's Close
}

func TestDockerSweepStale(t *testing.T) {
	p := newTestProvider(t, false)
	ctx := t.Context()
	cli := testClient(t)
	create := func(name string, labels map[string]string) string {
		t.Helper()
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   name + "-" + p.RunID(),
			Config: &container.Config{Image: p.Image(), Labels: labels},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
		})
		return res.ID
	}
	host, _ := os.Hostname()
	dead := create("lbchaos-test-dead", map[string]string{LabelRun: p.RunID(), LabelOwner: host + "/999999/1"})
	reused := create("lbchaos-test-reused-pid", map[string]string{LabelRun: p.RunID(), LabelOwner: host + "/" + strconv.Itoa(os.Getpid()) + "/1"})
	live := create("lbchaos-test-live", map[string]string{LabelRun: p.RunID(), LabelOwner: p.owner})
	other := create("lbchaos-test-other-host", map[string]string{LabelRun: p.RunID(), LabelOwner: "elsewhere/999999/1"})
	unlabelled := create("lbchaos-test-unlabelled", map[string]string{LabelOwner: host + "/999999/1"})

	// Another lbchaos process starting meanwhile (a concurrent test) may
	// sweep the stale ones first, so what counts is what is left, not how
	// many this call removed.
	if _, err := SweepStale(ctx, testLog{t}); err != nil {
		t.Fatal(err)
	}
	exists := func(id string) bool {
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		return err == nil
	}
	for name, c := range map[string]struct {
		id   string
		want bool
	}{
		"dead owner": {dead, false}, "pid reused": {reused, false},
		"live owner": {live, true}, "other host": {other, true}, "unlabelled": {unlabelled, true},
	} {
		if got := exists(c.id); got != c.want {
			t.Errorf("%s: exists %v after SweepStale, want %v", name, got, c.want)
		}
	}
}

func TestDockerStartCancelled(t *testing.T) {
	p := newTestProvider(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	if fl, err := p.Start(ctx, testSpec(4)); err == nil {
		fl.Close()
		t.Skip("4 containers started within 150 ms")
	}
	// The engine may finish a creation it was asked for just before the
	// cancellation; Start removes those too, within moments.
	deadline := time.Now().Add(3 * time.Second)
	n := countRun(t, p.RunID())
	for n != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n = countRun(t, p.RunID())
	}
	if n != 0 {
		t.Errorf("%d containers left after a cancelled Start", n)
	}
}

package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/reports"
)

var (
	exampleOnce sync.Once
	exampleRef  string
	exampleErr  error
)

// exampleImage builds experiments/exampleservice statically and returns
// its image (lbchaos-example:<hash>), once per test binary.
func exampleImage(t *testing.T) string {
	t.Helper()
	exampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lbchaos-example-")
		if err != nil {
			exampleErr = err
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "exampleservice")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/lbchaos/lbchaos/experiments/exampleservice")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			exampleErr = errors.New("go build: " + err.Error() + "\n" + string(b))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		exampleRef, exampleErr = BuildBinaryImage(ctx, bin, "lbchaos-example", nil)
	})
	if exampleErr != nil {
		t.Fatal(exampleErr)
	}
	return exampleRef
}

// newAppProvider returns a host-network provider (as --docker-network auto
// picks on a local Linux engine) closed, and checked to leave nothing
// behind, at the end of the test.
func newAppProvider(t *testing.T) *Provider {
	t.Helper()
	requireDocker(t)
	p, err := New(t.Context(), Options{
		Binary:       runtest.Binary(t),
		StartTimeout: 20 * time.Second,
		Log:          testLog{t},
		Reuse:        true,
		HostNetwork:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("provider close: %v", err)
		}
		if n := countRun(t, p.RunID()); n != 0 {
			t.Errorf("%d containers or networks of run %s left after Close", n, p.RunID())
		}
	})
	return p
}

func appSpec(image string, n int, extra string) string {
	return fmt.Sprintf(`
  count: %d
  app: {image: %q, port: 8080, health: /healthz, args: [--workers, "8", --service, 5ms]%s}`, n, image, extra)
}

func runApp(t *testing.T, p *Provider, exp *experiments.Experiment) *reports.Summary {
	t.Helper()
	e := live.New(live.Options{Provider: p})
	if _, err := e.Check(exp); err != nil {
		t.Fatal(err)
	}
	sum, err := harness.Run(t.Context(), exp, harness.Options{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestDockerAppFastFail: the example service as instances.app, a fail
// fault on instance 0 through its sidecar. Round-robin sends it about 1/N,
// least-inflight more (its failures are quick), and ejection cuts the
// errors.
func TestDockerAppFastFail(t *testing.T) {
	if testing.Short() {
		t.Skip("real load on containers")
	}
	p := newAppProvider(t)
	img := exampleImage(t)
	const n = 4
	exp := runtest.MustExperiment(t, "app-fast-fail", `
duration: 4s
rate: 300
timeout: 2s
instances:`+appSpec(img, n, ", port_env: PORT")+`
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503}}
strategies:
  - round-robin
  - least-inflight
  - least-inflight+eject(consecutive=5,duration=500ms,max_duration=500ms)
`)
	sum := runApp(t, p, exp)
	if sum.Backends != "docker" {
		t.Errorf("backends %q, want docker", sum.Backends)
	}
	rr := runtest.StrategyByName(t, sum, "round-robin")
	li := runtest.StrategyByName(t, sum, "least-inflight")
	ej := runtest.StrategyByName(t, sum, "least-inflight+eject(consecutive=5,duration=500ms,max_duration=500ms)")
	for _, st := range []reports.Strategy{rr, li, ej} {
		runtest.CheckAccounting(t, st)
		t.Logf("%s: requests %d, error ratio %.4f, instance 0 share %.3f, p99 %.1f ms", st.Name, st.Requests, st.ErrorRatio, st.Instances[0].Share, st.LatencyMs.P99)
		for _, in := range st.Instances {
			if in.Utilization != nil {
				t.Errorf("%s: instance %d has a utilization; an app reports none", st.Name, in.ID)
			}
		}
	}
	if s := rr.Instances[0].Share; s < 0.8/n || s > 1.2/n {
		t.Errorf("round-robin: faulty instance share %.3f, want about 1/%d", s, n)
	}
	if li.Instances[0].Share <= rr.Instances[0].Share {
		t.Errorf("least-inflight: faulty instance share %.3f, want more than round-robin's %.3f", li.Instances[0].Share, rr.Instances[0].Share)
	}
	if ej.ErrorRatio >= rr.ErrorRatio/2 {
		t.Errorf("eject: error ratio %.4f, want well below round-robin's %.4f", ej.ErrorRatio, rr.ErrorRatio)
	}
}

// TestDockerAppPause: pause freezes instance 0's app container (not its
// sidecar), so requests sent to it in the window hang until the timeout.
func TestDockerAppPause(t *testing.T) {
	if testing.Short() {
		t.Skip("real load on containers")
	}
	p := newAppProvider(t)
	img := exampleImage(t)
	exp := runtest.MustExperiment(t, "app-pause", `
duration: 4s
rate: 200
timeout: 500ms
instances:`+appSpec(img, 3, ", port_env: PORT")+`
faults:
  - {instance: 0, at: 1s, until: 2500ms, fault: {mode: pause}}
strategies: [round-robin]
`)
	sum := runApp(t, p, exp)
	st := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, st)
	tl := st.Timeline
	in0 := tl.Instances[0]
	var inWindow, outside float64
	var errsIn int64
	for i := range in0.Requests {
		at := float64(i) * tl.BucketS
		switch {
		case at >= 1 && at+tl.BucketS <= 2.5+1e-9:
			inWindow = max(inWindow, in0.P99Ms[i])
			errsIn += in0.Errors[i]
		case at+tl.BucketS <= 1+1e-9 || at >= 3:
			outside = max(outside, in0.P99Ms[i])
		}
	}
	t.Logf("instance 0: p99 %.1f ms in the pause window (%d errors), at most %.1f ms outside; bucket %.2fs, %d timeouts in all",
		inWindow, errsIn, outside, tl.BucketS, st.Instances[0].Timeouts)
	if inWindow < 400 {
		t.Errorf("instance 0: p99 %.1f ms while paused, want requests hanging until the 500 ms timeout", inWindow)
	}
	if errsIn == 0 || st.Instances[0].Timeouts == 0 {
		t.Errorf("instance 0: %d errors in the window, %d timeouts; want the paused requests to time out", errsIn, st.Instances[0].Timeouts)
	}
	if outside > 100 {
		t.Errorf("instance 0: p99 %.1f ms outside the pause window, want a few ms", outside)
	}
}

// TestDockerAppErrors: a missing image and an app that never becomes
// healthy stop the start with a clear error and leave nothing running.
func TestDockerAppErrors(t *testing.T) {
	p := newAppProvider(t)
	img := exampleImage(t)
	ctx := t.Context()
	spec := func(app experiments.App) fleet.Spec {
		app.Health = "/healthz"
		return fleet.Spec{Instances: experiments.Instances{Count: 2, App: &app}, Seed: 1}
	}
	t.Run("image missing", func(t *testing.T) {
		_, err := p.Start(ctx, spec(experiments.App{Image: "lbchaos-test/none:0", Port: 8080, PortEnv: "PORT"}))
		want := "image lbchaos-test/none:0 is not present locally: build it (docker build -t lbchaos-test/none:0 ...) or load it (docker load -i ...); lbchaos never pulls"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v\nwant it to contain %q", err, want)
		}
	})
	t.Run("never healthy", func(t *testing.T) {
		q, err := New(ctx, Options{Binary: runtest.Binary(t), StartTimeout: 2 * time.Second, Log: testLog{t}, HostNetwork: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := q.Close(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		// --workers 0 makes the example service exit at once with a message.
		_, err = q.Start(ctx, spec(experiments.App{Image: img, Port: 8080, PortEnv: "PORT", Args: []string{"--workers", "0"}}))
		for _, want := range []string{"did not become healthy", "exampleservice: --workers: want at least 1, got 0"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, want)
			}
		}
		t.Logf("error: %v", err)
		if n := countRun(t, q.RunID()); n != 0 {
			t.Errorf("%d containers of a failed start left", n)
		}
	})
}

// TestDockerAppFleet: each instance is the app and its sidecar, both
// labelled; the backend is the sidecar; kill acts on the app, and a
// restarted app answers again through the same sidecar, with port_env
// (host network) and without (a published fixed port).
func TestDockerAppFleet(t *testing.T) {
	p := newAppProvider(t)
	img := exampleImage(t)
	for _, portEnv := range []string{"PORT", ""} {
		t.Run("port_env="+portEnv, func(t *testing.T) { testAppFleet(t, p, img, portEnv) })
	}
}

func testAppFleet(t *testing.T, p *Provider, img, portEnv string) {
	ctx := t.Context()
	app := experiments.App{Image: img, Port: 8080, PortEnv: portEnv, Health: "/healthz", Env: map[string]string{"X": "1"}}
	fl, err := p.Start(ctx, fleet.Spec{Instances: experiments.Instances{Count: 2, App: &app}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*dockerFleet)
	cli := testClient(t)
	for i, in := range f.insts {
		for role, c := range map[string]string{"app": in.ctr.GetContainerID(), "sidecar": in.side.GetContainerID()} {
			insp, err := cli.ContainerInspect(ctx, c, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if l := insp.Container.Config.Labels; l[LabelRun] != p.RunID() || l[labelRole] != role {
				t.Errorf("instance %d %s: labels %v", i, role, l)
			}
		}
		b := f.Backends()[i]
		if b.URL.Port() != fmt.Sprint(in.port) || b.Control == nil {
			t.Errorf("instance %d: backend %s, want the sidecar on port %d", i, b.URL, in.port)
		}
		if code, id, err := get(ctx, b, 2*time.Second); err != nil || code != 200 || id != fmt.Sprint(i) {
			t.Errorf("instance %d: %d %q %v", i, code, id, err)
		}
	}
	if err := f.Kill(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if code, _, err := get(ctx, f.Backends()[0], 2*time.Second); err != nil || code != 502 {
		t.Errorf("killed app: status %d, err %v; want the sidecar's 502", code, err)
	}
	if err := f.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if code, _, err := get(ctx, f.Backends()[0], 2*time.Second); err != nil || code != 200 {
		t.Errorf("restarted app: status %d, err %v", code, err)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDockerAppRestart: with app.restart the app's containers are restarted
// when a released fleet is reset for the next strategy; without it they
// keep running.
func TestDockerAppRestart(t *testing.T) {
	p := newAppProvider(t)
	img := exampleImage(t)
	ctx := t.Context()
	cli := testClient(t)
	for _, restart := range []bool{false, true} {
		app := experiments.App{Image: img, Port: 8080, PortEnv: "PORT", Health: "/healthz", Restart: restart}
		spec := fleet.Spec{Instances: experiments.Instances{Count: 1, App: &app}, Seed: 1}
		startedAt := func(f *dockerFleet) string {
			insp, err := cli.ContainerInspect(ctx, f.insts[0].ctr.GetContainerID(), client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return insp.Container.State.StartedAt
		}
		fl, err := p.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		first := startedAt(fl.(*dockerFleet))
		fl.Close()
		fl, err = p.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		f := fl.(*dockerFleet)
		if again := startedAt(f); (again != first) != restart {
			t.Errorf("restart %v: the app started at %s, then at %s", restart, first, again)
		}
		if code, _, err := get(ctx, f.Backends()[0], 2*time.Second); err != nil || code != 200 {
			t.Errorf("restart %v: status %d, err %v", restart, code, err)
		}
		fl.Close()
	}
}

// TestDockerAppFixedPort: an app without port_env runs on the bridge with
// its port published on 127.0.0.1; the sidecar reaches it through the
// engine's forwarding. The same load on apps with port_env (host network)
// shows what that forwarding costs; the summary says so in a note.
func TestDockerAppFixedPort(t *testing.T) {
	if testing.Short() {
		t.Skip("real load on containers")
	}
	p := newAppProvider(t)
	img := exampleImage(t)
	var p50 [2]float64
	for i, extra := range []string{", port_env: PORT", ""} {
		exp := runtest.MustExperiment(t, "app-fixed-port", `
duration: 3s
rate: 300
timeout: 2s
instances:`+appSpec(img, 3, extra)+`
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503}}
strategies: [round-robin]
`)
		sum := runApp(t, p, exp)
		st := runtest.StrategyByName(t, sum, "round-robin")
		runtest.CheckAccounting(t, st)
		in1 := st.Instances[1]
		p50[i] = in1.LatencyMs.P50
		t.Logf("port_env %v: healthy instance 1: p50 %.2f ms, p99 %.2f ms, %d errors; faulty instance 0: %d of %d failed",
			extra != "", in1.LatencyMs.P50, in1.LatencyMs.P99, in1.Errors, st.Instances[0].Errors, st.Instances[0].Requests)
		if in1.Errors != 0 || st.Instances[0].Errors != st.Instances[0].Requests || st.Instances[0].Requests == 0 {
			t.Errorf("port_env %v: instance 1 had %d errors, instance 0 %d of %d; want none, and every one", extra != "", in1.Errors, st.Instances[0].Errors, st.Instances[0].Requests)
		}
		noted := strings.Contains(strings.Join(sum.Notes, "\n"), "userland proxy (docker-proxy) adds latency")
		if noted != (extra == "") {
			t.Errorf("port_env %v: the docker-proxy note is there: %v; notes %q", extra != "", noted, sum.Notes)
		}
	}
	t.Logf("p50 added by the engine's port forwarding: %.2f ms", p50[1]-p50[0])
}

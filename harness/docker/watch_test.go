package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/reports"
)

// outsideKiller is the Docker provider whose fleets have instance id's
// container killed from outside the harness (the engine's API, as `docker
// kill` does) once it has served served requests.
type outsideKiller struct {
	*Provider
	cli    client.APIClient
	id     int
	served int64
	killed chan time.Time // when the kill was sent
	fleets [][]string     // the containers of each fleet started, by instance
}

func (k *outsideKiller) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	fl, err := k.Provider.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	f := &killingFleet{dockerFleet: fl.(*dockerFleet), done: make(chan struct{})}
	var ids []string
	for _, in := range f.insts {
		ids = append(ids, in.ctr.GetContainerID())
	}
	k.fleets = append(k.fleets, ids)
	if len(k.fleets) > 1 {
		return f, nil // the first fleet only
	}
	f.wg.Go(func() {
		ctl := f.Backend(k.id).Control
		for {
			select {
			case <-f.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if st, err := ctl.Stats(context.Background()); err == nil && st.Served >= k.served {
				at := time.Now()
				if _, err := k.cli.ContainerKill(context.Background(), f.insts[k.id].ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err == nil {
					k.killed <- at
				}
				return
			}
		}
	})
	return f, nil
}

// killingFleet is a docker fleet that stops its killer when closed.
type killingFleet struct {
	*dockerFleet
	done chan struct{}
	wg   sync.WaitGroup
}

func (f *killingFleet) Close() error {
	close(f.done)
	f.wg.Wait()
	return f.dockerFleet.Close()
}

// TestDockerUnscheduledExit: during a 4 s real run, instance 1's
// container is killed from outside the harness about 1.5 s in, and
// instance 2's by the schedule (a kill fault at 0.5 s). The first is a
// crash event, noticed within a second, with its time, exit code and the
// container's last lines of output, in summary.json and report.md; the
// second, expected, is none. The run goes on, instance 1's requests
// failing from then on, and its scheduled kill at 3.5 s finds it dead
// already, which is no error. The next strategy reuses the containers,
// the crashed one started again.
func TestDockerUnscheduledExit(t *testing.T) {
	if testing.Short() {
		t.Skip("real load on containers")
	}
	p := newTestProvider(t, true)
	k := &outsideKiller{Provider: p, cli: testClient(t), id: 1, served: 150, killed: make(chan time.Time, 1)}
	exp := runtest.MustExperiment(t, "docker-unscheduled-exit", `
duration: 4s
rate: 300
timeout: 1s
instances:
  count: 3
  workers: 8
  service: {dist: fixed, value: 2ms}
faults:
  - {instance: 2, at: 0.5s, fault: {mode: kill}}
  - {instance: 1, at: 3.5s, fault: {mode: kill}}
strategies: [round-robin, p2c]
`)
	var seen struct {
		sync.Mutex
		at time.Time // when the harness logged the crash
	}
	logw := lineWatcher{t: t, match: "instance 1 crashed", seen: func() {
		seen.Lock()
		if seen.at.IsZero() {
			seen.at = time.Now()
		}
		seen.Unlock()
	}}
	e := live.New(live.Options{Provider: k})
	sum, err := harness.Run(t.Context(), exp, harness.Options{Engine: e, Log: logw})
	if err != nil {
		t.Fatal(err)
	}
	var killedAt time.Time
	select {
	case killedAt = <-k.killed:
	default:
		t.Fatal("instance 1 was never killed")
	}
	st := runtest.StrategyByName(t, sum, "round-robin")
	runtest.CheckAccounting(t, st)
	var crashes []reports.Event
	for _, e := range st.Events {
		if e.Kind == reports.EventCrash {
			crashes = append(crashes, e)
		}
	}
	if len(crashes) != 1 {
		t.Fatalf("crash events %+v, want one, of instance 1 (instance 2's kill was scheduled)", crashes)
	}
	c := crashes[0]
	t.Logf("crash event: %+v", c)
	if c.Instance != 1 {
		t.Errorf("crash of instance %d, want 1", c.Instance)
	}
	if c.TimeS < 0.5 || c.TimeS > 3.5 {
		t.Errorf("crash at %.3f s, want inside the run, about 1.5 s in", c.TimeS)
	}
	if !strings.Contains(c.Detail, "exited with code 137") {
		t.Errorf("crash detail %q lacks the exit code", c.Detail)
	}
	if !strings.Contains(strings.Join(c.Log, "\n"), "instance 1 listening") {
		t.Errorf("crash log %q lacks the container's output", c.Log)
	}
	seen.Lock()
	latency := seen.at.Sub(killedAt)
	seen.Unlock()
	t.Logf("the kill was noticed %v after it was sent at %v", latency, killedAt.Format("15:04:05.000"))
	if latency <= 0 || latency > time.Second {
		t.Errorf("the kill was noticed %v after it was sent, want within a second", latency)
	}
	series := st.Timeline.Instances[1]
	for b := int(c.TimeS/st.Timeline.BucketS) + 1; b < len(series.Requests); b++ {
		if series.Errors[b] != series.Requests[b] {
			t.Errorf("instance 1: %d of %d requests failed in second %d, after its container died; want all", series.Errors[b], series.Requests[b], b)
		}
	}
	if st.Instances[0].ErrorRatio > 0.05 {
		t.Errorf("instance 0: error ratio %.3f; it was never killed", st.Instances[0].ErrorRatio)
	}

	// The second strategy: the same containers, instance 1's started
	// again by the reset, serving every request.
	if len(k.fleets) != 2 || k.fleets[1][1] != k.fleets[0][1] {
		t.Errorf("fleets %q: want the second to reuse the first's containers", k.fleets)
	}
	p2c := runtest.StrategyByName(t, sum, "p2c")
	s1 := p2c.Timeline.Instances[1]
	for b := range 3 { // before its scheduled kill
		if s1.Requests[b] == 0 || s1.Errors[b] != 0 {
			t.Errorf("p2c: instance 1 answered %d of %d requests with errors in second %d; want it started again and serving", s1.Errors[b], s1.Requests[b], b)
		}
	}
	for _, e := range p2c.Events {
		if e.Kind == reports.EventCrash {
			t.Errorf("p2c: crash event %+v; nothing crashed", e)
		}
	}

	dir := t.TempDir()
	if err := reports.WriteAll(dir, sum); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{reports.MarkdownFile, reports.SummaryFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"exited with code 137", "instance 1 listening"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	if !strings.Contains(string(md), "**instance 1 crashed at ") {
		t.Errorf("report.md does not show the crash with its time")
	}
}

// lineWatcher logs the engine's lines to the test and calls seen on the
// first that contains match.
type lineWatcher struct {
	t     *testing.T
	match string
	seen  func()
}

func (w lineWatcher) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.match) {
		w.seen()
	}
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

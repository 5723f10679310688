package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/lbchaos/lbchaos/harness/fleet"
)

var _ fleet.Watcher = (*dockerFleet)(nil)

// watchRetry is the pause before the event stream is opened again after
// it broke.
const watchRetry = 100 * time.Millisecond

// Watch implements fleet.Watcher with the engine's event stream: a "die"
// event of one of the fleet's containers that no scheduled kill explains
// (Kill expects the exit it causes) is reported as a fatal crash, with
// the exit code and the container's last lines of output (fetched by
// Crash.Log). The engine pushes the event as the process ends, so the
// report follows within milliseconds; stop is called before the fleet is closed, whose
// containers' removal is therefore not reported.
func (f *dockerFleet) Watch(report func(fleet.Crash)) (stop func(), err error) {
	byID := map[string]watched{}
	for _, in := range f.insts {
		byID[in.ctr.GetContainerID()] = watched{in: in, c: in.ctr}
		if in.side != nil {
			byID[in.side.GetContainerID()] = watched{in: in, c: in.side, sidecar: true}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	since := time.Now()
	res, err := f.subscribe(ctx, since)
	if err != nil {
		cancel()
		return nil, err
	}
	seen := map[string]int64{} // container id -> the time of its last exit seen
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-res.Err:
				if ctx.Err() != nil {
					return
				}
				// The stream broke (the engine restarted, a proxy
				// timed out): open it again from the last event seen.
				fmt.Fprintf(f.p.opts.Log, "docker: event stream of run %s ended (%v); reopening it\n", f.p.runID, err)
				var ok bool
				if res, ok = f.resubscribe(ctx, since); !ok {
					return
				}
			case msg := <-res.Messages:
				since = time.Unix(0, msg.TimeNano)
				w, ok := byID[msg.Actor.ID]
				if !ok || msg.TimeNano <= seen[msg.Actor.ID] || f.Closed() {
					continue // not ours, or seen before the stream was reopened
				}
				seen[msg.Actor.ID] = msg.TimeNano
				if w.expected() {
					continue
				}
				if !w.sidecar {
					w.in.crashed.Store(true)
				}
				report(f.crashOf(ctx, w, msg))
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}, nil
}

// resubscribe opens the stream again, retrying with a growing pause (up
// to a second) until it opens or ctx is done (ok false).
func (f *dockerFleet) resubscribe(ctx context.Context, since time.Time) (res client.EventsResult, ok bool) {
	pause := watchRetry
	for {
		select {
		case <-ctx.Done():
			return res, false
		case <-time.After(pause):
		}
		res, err := f.subscribe(ctx, since)
		if err == nil {
			return res, true
		}
		if pause == watchRetry {
			fmt.Fprintf(f.p.opts.Log, "docker: event stream of run %s: %v; retrying\n", f.p.runID, err)
		}
		pause = min(2*pause, time.Second)
	}
}

// subscribe opens the stream of the run's containers' die events from
// since on.
func (f *dockerFleet) subscribe(ctx context.Context, since time.Time) (client.EventsResult, error) {
	filters := client.Filters{}.
		Add("type", string(events.ContainerEventType)).
		Add("event", string(events.ActionDie)).
		Add("label", LabelRun+"="+f.p.runID)
	res := f.p.cli.Events(ctx, client.EventsListOptions{
		Since:   fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Filters: filters,
	})
	// Events returns once the engine answered the request or the request
	// failed; the failure reaches Err just after. Wait a moment for it, so
	// that a watch that cannot start says so.
	select {
	case err := <-res.Err:
		if err != nil {
			return res, fmt.Errorf("docker backends: watch the containers' exits: %w", err)
		}
	case <-time.After(10 * time.Millisecond):
	}
	return res, nil
}

// watched is one of a fleet's containers.
type watched struct {
	in      *dockerInstance
	c       testcontainers.Container
	sidecar bool // the sidecar in front of an app (instances.app)
}

// expected reports whether the container's exit was caused by the
// harness (a scheduled kill), consuming the expectation.
func (w watched) expected() bool {
	if w.sidecar {
		return false
	}
	for {
		n := w.in.expectExit.Load()
		if n <= 0 {
			return false
		}
		if w.in.expectExit.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// crashOf describes the exit of w's container that msg reports; its Log
// asks the engine for the container's last lines, within ctx.
func (f *dockerFleet) crashOf(ctx context.Context, w watched, msg events.Message) fleet.Crash {
	what := "container"
	switch {
	case w.sidecar:
		what = "sidecar container"
	case w.in.side != nil:
		what = "app container"
	}
	code := msg.Actor.Attributes["exitCode"]
	detail := fmt.Sprintf("its %s exited with code %s without a scheduled kill", what, code)
	if code == "137" {
		detail += " (SIGKILL: killed from outside, or by the kernel's OOM killer)"
	}
	return fleet.Crash{
		Instance: w.in.id,
		Time:     time.Unix(0, msg.TimeNano),
		Fatal:    true,
		Detail:   detail,
		Log:      func() []string { return f.lastLogLines(ctx, w.c) },
	}
}

// lastLogLines returns the last fleet.LogLines lines of c's output, or
// one line saying why there are none. It asks the engine for only those
// (a tail), in one call.
func (f *dockerFleet) lastLogLines(ctx context.Context, c testcontainers.Container) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := f.p.cli.ContainerLogs(ctx, c.GetContainerID(), client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(fleet.LogLines),
	})
	if err != nil {
		return []string{fmt.Sprintf("(its output could not be read: %v)", err)}
	}
	defer rc.Close()
	// The containers have no TTY: stdout and stderr come multiplexed.
	var out bytes.Buffer
	w := &limitWriter{w: &out, n: 1 << 20}
	if _, err := stdcopy.StdCopy(w, w, rc); err != nil && out.Len() == 0 {
		return []string{fmt.Sprintf("(its output could not be read: %v)", err)}
	}
	lines := fleet.LastLines(out.String(), fleet.LogLines)
	if len(lines) == 0 {
		return []string{"(the container wrote nothing)"}
	}
	return lines
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

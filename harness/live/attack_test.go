package live

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
)

// scriptedProvider starts in-process backends whose fleet takes container
// faults and writes down every one it is asked for, in order: the
// container of an instance is its in-process server, a pause a hang
// fault set through its control API and a CPU limit a record only.
type scriptedProvider struct {
	mu  sync.Mutex
	ops []string
	// then, when set, is called after each operation is written down.
	then func(op string)
}

var (
	_ fleet.ContainerProvider = (*scriptedProvider)(nil)
	_ faultyserver.Containers = (*scriptedFleet)(nil)
)

func (p *scriptedProvider) Name() string          { return "scripted" }
func (p *scriptedProvider) ContainerFaults() bool { return true }
func (p *scriptedProvider) InProcess() bool       { return true }

func (p *scriptedProvider) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	fl, err := process.Provider{}.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &scriptedFleet{Fleet: fl, p: p}, nil
}

func (p *scriptedProvider) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ops)
}

type scriptedFleet struct {
	fleet.Fleet
	p *scriptedProvider
}

func (f *scriptedFleet) note(op string, id int) {
	op = fmt.Sprintf("%s %d", op, id)
	f.p.mu.Lock()
	f.p.ops = append(f.p.ops, op)
	f.p.mu.Unlock()
	if f.p.then != nil {
		f.p.then(op)
	}
}

func (f *scriptedFleet) Pause(ctx context.Context, id int) error {
	f.note("pause", id)
	return f.Backends()[id].Control.SetFault(ctx, faultyserver.Hang{})
}

func (f *scriptedFleet) Unpause(ctx context.Context, id int) error {
	f.note("unpause", id)
	return f.Backends()[id].Control.ClearFault(ctx)
}

func (f *scriptedFleet) SetCPU(_ context.Context, id int, cpus float64) error {
	f.note(fmt.Sprintf("cpu %g", cpus), id)
	return nil
}

func (f *scriptedFleet) Kill(context.Context, int) error    { return fmt.Errorf("not scripted") }
func (f *scriptedFleet) Restart(context.Context, int) error { return fmt.Errorf("not scripted") }

// TestAttackLifecycle runs the one attack against a scripted fleet: the
// faults are armed and healed in their order, each once; every result is
// collected once (the instances' requests, the unattributed and the
// aborted add up to what was sent); and an interrupted attack is finished
// once, as a partial measurement.
func TestAttackLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "lifecycle", `
seed: 3
duration: 1500ms
timeout: 400ms
arrival: constant
rate: 300
instances: {count: 3, workers: 0, service: {dist: fixed, value: 2ms}}
faults:
  - {instance: 2, at: 0s, until: 1s, fault: {mode: cpu, cpus: 0.5}}
  - {instance: 1, at: 300ms, until: 700ms, fault: {mode: pause}}
  - {instance: 0, at: 900ms, until: 1200ms, fault: {mode: cpu, cpus: 0.1}}
strategies: [round-robin]
`)
	for _, tc := range []struct {
		name string
		// interrupt, when set, is the operation 100 ms after which the run
		// is interrupted.
		interrupt string
		want      []string
	}{
		{"whole", "", []string{"cpu 0.5 2", "pause 1", "unpause 1", "cpu 0.1 0", "cpu 0 2", "cpu 0 0"}},
		{"interrupted", "pause 1", []string{"cpu 0.5 2", "pause 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &scriptedProvider{then: func(op string) {
				if op == tc.interrupt {
					time.AfterFunc(100*time.Millisecond, cancel)
				}
			}}
			e := New(Options{Provider: p})
			m, err := e.Measure(ctx, engine.Job{Exp: exp, Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.log(); !slices.Equal(got, tc.want) {
				t.Errorf("container operations %q, want %q", got, tc.want)
			}
			var collected int64
			for _, in := range m.Strategy.Instances {
				collected += in.Requests
			}
			collected += m.Unattributed + m.Aborted
			if m.Sent == 0 || collected != m.Sent {
				t.Errorf("sent %d, collected %d (instances, unattributed %d, aborted %d): every result once", m.Sent, collected, m.Unattributed, m.Aborted)
			}
			if m.Interrupted != (tc.interrupt != "") {
				t.Errorf("interrupted %v, want %v", m.Interrupted, tc.interrupt != "")
			}
			if tc.interrupt != "" {
				// Paused at 300 ms, interrupted 100 ms later.
				if m.Elapsed < 400*time.Millisecond || m.Elapsed >= 700*time.Millisecond {
					t.Errorf("elapsed %v, want from 400 ms to before the unpause at 700 ms", m.Elapsed)
				}
				return
			}
			if m.Elapsed != exp.Duration || m.Scheduled != 450 {
				t.Errorf("elapsed %v, scheduled %d; want %v and 450", m.Elapsed, m.Scheduled, exp.Duration)
			}
			if m.Strategy.Instances[1].Requests == 0 || m.Strategy.Instances[1].Errors == 0 {
				t.Errorf("instance 1: %d requests, %d errors; its pause should time some out", m.Strategy.Instances[1].Requests, m.Strategy.Instances[1].Errors)
			}
		})
	}
}

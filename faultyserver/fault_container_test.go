package faultyserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// recordingContainers records the runtime actions container faults take.
type recordingContainers struct{ calls []string }

func (r *recordingContainers) Pause(_ context.Context, id int) error {
	r.calls = append(r.calls, fmt.Sprintf("pause %d", id))
	return nil
}

func (r *recordingContainers) Unpause(_ context.Context, id int) error {
	r.calls = append(r.calls, fmt.Sprintf("unpause %d", id))
	return nil
}

func (r *recordingContainers) Kill(_ context.Context, id int) error {
	r.calls = append(r.calls, fmt.Sprintf("kill %d", id))
	return nil
}

func (r *recordingContainers) Restart(_ context.Context, id int) error {
	r.calls = append(r.calls, fmt.Sprintf("restart %d", id))
	return nil
}

func (r *recordingContainers) SetCPU(_ context.Context, id int, cpus float64) error {
	r.calls = append(r.calls, fmt.Sprintf("cpu %d %g", id, cpus))
	return nil
}

func TestContainerFaultsActThroughContainers(t *testing.T) {
	cases := []struct {
		name  string
		fault ContainerFault
		want  string
	}{
		{"pause", Pause{}, "pause 3,unpause 3"},
		{"kill", Kill{}, "kill 3,restart 3"},
		{"cpu", CPU{CPUs: 0.02}, "cpu 3 0.02,cpu 3 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rc recordingContainers
			ctx := context.Background()
			if err := tc.fault.Inflict(ctx, &rc, 3); err != nil {
				t.Fatal(err)
			}
			if err := tc.fault.Heal(ctx, &rc, 3); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rc.calls, ","); got != tc.want {
				t.Errorf("calls = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProbeHealthy(t *testing.T) {
	cases := []struct {
		name  string
		fault Fault
		want  bool
	}{
		{"none", nil, true},
		{"fail keeps healthz", Fail{Status: 503}, true},
		{"fail with unhealthy healthz", Fail{Status: 503, Health: Health{Status: 503}}, false},
		{"hang with healthz 200", Hang{}, true},
		{"pause answers nothing", Pause{}, false},
		{"kill answers nothing", Kill{}, false},
		{"cpu still answers", CPU{CPUs: 0.1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProbeHealthy(tc.fault); got != tc.want {
				t.Errorf("ProbeHealthy(%s) = %v, want %v", Describe(tc.fault), got, tc.want)
			}
		})
	}
}

package experiments

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLongConnectionsSettings: long-connections speaks h2c over a few
// connections per client, has three instances join after the slow one
// turned slow, and compares connection-level with per-request balancing.
func TestLongConnectionsSettings(t *testing.T) {
	e, err := Load("long-connections")
	if err != nil {
		t.Fatal(err)
	}
	if e.Protocol != ProtocolH2C || e.Connections != 4 || e.Replicas != 4 {
		t.Errorf("protocol %s, %d connections, %d replicas; want h2c, 4, 4", e.Protocol, e.Connections, e.Replicas)
	}
	if got := e.Instances.Joining(); !cmp.Equal(got, []int{5, 6, 7}) {
		t.Errorf("joining instances %v, want [5 6 7]", got)
	}
	if len(e.Faults) != 1 || e.Faults[0].Instance != 0 || e.Faults[0].Spec.Mode() != "slow" || e.Faults[0].At >= e.Instances.Instance(5).JoinAt {
		t.Errorf("faults %+v, want instance 0 slow before the joins", e.Faults)
	}
	if e.Duration > time.Minute {
		t.Errorf("duration %v: keep it short, the real run takes 5 strategies", e.Duration)
	}
	want := []string{"random+pinned", "round-robin+pinned", "p2c+pinned(max_age=2s)", "p2c", "least-inflight"}
	if diff := cmp.Diff(want, e.Strategies); diff != "" {
		t.Errorf("strategies (-want +got):\n%s", diff)
	}
}

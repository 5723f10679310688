package sim

import (
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// TestCheckNotesH2C: an h2c experiment gets a note on what the simulator
// does not model; an HTTP/1.1 one does not.
func TestCheckNotesH2C(t *testing.T) {
	for _, tc := range []struct {
		name, protocol string
		want           bool
	}{
		{"h2c", "protocol: h2c\nconnections: 2\n", true},
		{"http1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "proto-"+tc.name, tc.protocol+`
duration: 1s
rate: 100
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [random+pinned]
`)
			notes, err := Engine{}.Check(exp)
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, n := range notes {
				got = got || strings.HasPrefix(n, "protocol h2c:")
			}
			if got != tc.want {
				t.Errorf("notes %q: an h2c note %v, want %v", notes, got, tc.want)
			}
		})
	}
}

// TestSimPinnedFollowsConnections: in the simulator a pinned strategy
// sends every request of a connection to its instance: with 2 connections
// and one replica exactly two instances get traffic, half each, and the
// instance that joins at 1 s gets none, until max_age recycles the
// connections.
func TestSimPinnedFollowsConnections(t *testing.T) {
	for _, tc := range []struct {
		spec          string
		pinnedShares  bool // shares are exactly 0.5, 0.5, 0, 0, 0
		newcomerGets0 bool
	}{
		{"round-robin+pinned", true, true},
		{"round-robin+pinned(max_age=1s)", false, false},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			exp := runtest.MustExperiment(t, "sim-pinned", `
duration: 4s
arrival: constant
rate: 200
protocol: h2c
connections: 2
instances:
  service: {dist: fixed, value: 1ms}
  groups:
    - {count: 4}
    - {count: 1, join_at: 1s}
strategies: ["`+tc.spec+`"]
`)
			m, err := simStrategy(t.Context(), exp, tc.spec, simHooks{})
			if err != nil {
				t.Fatal(err)
			}
			var shares []float64
			for _, in := range m.Strategy.Instances {
				shares = append(shares, float64(in.Requests)/float64(m.Strategy.Requests))
			}
			if tc.pinnedShares {
				want := []float64{0.5, 0.5, 0, 0, 0}
				for i := range want {
					if d := shares[i] - want[i]; d > 0.01 || d < -0.01 {
						t.Fatalf("shares %v, want %v", shares, want)
					}
				}
			}
			if got := shares[4] == 0; got != tc.newcomerGets0 {
				t.Errorf("shares %v: the newcomer's is 0: %v, want %v", shares, got, tc.newcomerGets0)
			}
		})
	}
}

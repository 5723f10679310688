package sim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/reports"
)

const loadPollExp = `
seed: 3
duration: 2s
arrival: poisson
rate: 120
timeout: 30s
replicas: 3
instances: {count: 4, workers: 1, service: {dist: fixed, value: 30ms}}
strategies:
  - server-load(report_interval=250ms,choice_count=0)
  - server-load(report_interval=250ms)
`

// TestSimLoadPollSnapshots checks the simulator's load poller against the
// trace: the snapshot published at each multiple of the interval is every
// instance's requests present then (arrived before, not yet answered,
// since polls come before answers and arrivals at the same instant), and
// every full-scan pick until the next poll goes to an instance of least
// load in it, whichever replica makes it; two choices never pick an
// instance whose load is above every other's.
func TestSimLoadPollSnapshots(t *testing.T) {
	exp := runtest.MustExperiment(t, "loadpoll", loadPollExp)
	const every = 250 * time.Millisecond
	for _, name := range exp.Strategies {
		t.Run(name, func(t *testing.T) {
			_, rs := traceSim(t, exp, name)
			full := name == exp.Strategies[0]
			herded := 0
			for p := time.Duration(0); p < exp.Duration; p += every {
				snap := make([]int, 4)
				for _, r := range rs {
					if r.SentAt < p && r.SentAt+r.Latency >= p {
						snap[r.Instance]++
					}
				}
				least, most := slices.Min(snap), slices.Max(snap)
				nMost := 0
				for _, l := range snap {
					if l == most {
						nMost++
					}
				}
				used := map[int]bool{}
				for _, r := range rs {
					if r.SentAt < p || r.SentAt >= p+every {
						continue
					}
					used[r.Instance] = true
					if full && snap[r.Instance] != least {
						t.Fatalf("poll at %v: snapshot %v, a request at %v went to %d", p, snap, r.SentAt, r.Instance)
					}
					if !full && nMost == 1 && snap[r.Instance] == most && most > least {
						t.Fatalf("poll at %v: snapshot %v, two choices picked the most loaded %d", p, snap, r.Instance)
					}
				}
				if len(used) == 1 {
					herded++
				}
			}
			if full && herded < 4 {
				t.Errorf("full scan: %d of 8 intervals sent everything to one instance, want at least 4", herded)
			}
			if !full && herded > 0 {
				t.Errorf("two choices: %d intervals sent everything to one instance, want none", herded)
			}
		})
	}
}

// TestSimLoadPollSchedule checks that the poller publishes at 0 and every
// interval before the end of the attack, to the one board shared by a
// generator's replicas, and to every generator's board alike.
func TestSimLoadPollSchedule(t *testing.T) {
	for _, gens := range []int{1, 2} {
		t.Run(fmt.Sprintf("generators=%d", gens), func(t *testing.T) {
			exp := runtest.MustExperiment(t, "loadpoll", loadPollExp+fmt.Sprintf("generators: %d\n", gens))
			s, err := newSim(exp, exp.Strategies[0], simHooks{}, engine.NewEventLog(Epoch))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.loads.boards) != gens {
				t.Fatalf("%d boards, want one per generator (%d)", len(s.loads.boards), gens)
			}
			for _, g := range s.gens {
				for _, lb := range g.lbs {
					if lb.LoadSource() != g.lbs[0].LoadSource() {
						t.Fatal("the replicas of a generator read different boards")
					}
				}
			}
			if s.run(context.Background().Done()) {
				t.Fatal("interrupted")
			}
			first, v := s.loads.boards[0].Snapshot()
			if v != 8 {
				t.Errorf("version %d after 2 s at 250 ms, want 8 (0, 250 ms, ..., 1750 ms)", v)
			}
			for i, b := range s.loads.boards[1:] {
				if loads, w := b.Snapshot(); w != v || !slices.Equal(loads, first) {
					t.Errorf("board %d: %v version %d, board 0: %v version %d", i+1, loads, w, first, v)
				}
			}
		})
	}
}

// TestSimHerd checks that the shipped herd experiment, shortened to 20 s,
// shows what it exists to show: replicas on exact in-flight counts do not
// herd (least-inflight about p2c), a full scan on the shared signal polled
// every second does (share std dev and largest jump several times p2c's),
// and two choices on the same signal damp it.
func TestSimHerd(t *testing.T) {
	full, err := experiments.Load("herd")
	if err != nil {
		t.Fatal(err)
	}
	const scan, two = "server-load(report_interval=1s,choice_count=0)", "server-load(report_interval=1s)"
	exp, err := full.Apply(experiments.Overrides{Duration: 20 * time.Second, Strategies: []string{"least-inflight", "p2c", scan, two}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := runSim(context.Background(), exp, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]reports.Strategy{}
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		got[st.Name] = st
		t.Logf("%s: share std dev %.4f, max jump %.0f req/s", st.Name, st.ShareStddev, st.MaxJumpRps)
	}
	li, p2c, sc, tw := got["least-inflight"], got["p2c"], got[scan], got[two]
	if li.ShareStddev > 1.5*p2c.ShareStddev {
		t.Errorf("least-inflight share std dev %v, p2c %v: want about the same", li.ShareStddev, p2c.ShareStddev)
	}
	if sc.ShareStddev < 5*p2c.ShareStddev || sc.MaxJumpRps < 5*p2c.MaxJumpRps {
		t.Errorf("stale full scan: share std dev %v, max jump %v; want several times p2c's %v, %v", sc.ShareStddev, sc.MaxJumpRps, p2c.ShareStddev, p2c.MaxJumpRps)
	}
	if tw.ShareStddev > sc.ShareStddev/2 || tw.MaxJumpRps > sc.MaxJumpRps/2 {
		t.Errorf("stale two choices: share std dev %v, max jump %v; want at most half the full scan's %v, %v", tw.ShareStddev, tw.MaxJumpRps, sc.ShareStddev, sc.MaxJumpRps)
	}
}

package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestServerLoadReportIntervalParams(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		noSource bool
		interval time.Duration // 0: no LoadReports
		count    int
		wantErr  string
	}{
		{name: "per response", spec: "server-load", count: 2},
		{name: "polled two choices", spec: "server-load(report_interval=1s)", interval: time.Second, count: 2},
		{name: "polled full scan", spec: "server-load(report_interval=250ms,choice_count=0)", interval: 250 * time.Millisecond},
		{name: "at the minimum", spec: "server-load(report_interval=10ms)", interval: 10 * time.Millisecond, count: 2},
		{name: "below the minimum", spec: "server-load(report_interval=5ms)",
			wantErr: `server-load: report_interval: want at least 10ms (every instance is polled that often), got "5ms"`},
		{name: "zero", spec: "server-load(report_interval=0s)", wantErr: `server-load: report_interval: want a duration > 0, got "0s"`},
		{name: "not a duration", spec: "server-load(report_interval=often)", wantErr: `server-load: report_interval: want a duration like "5s", got "often"`},
		{name: "no source", spec: "server-load(report_interval=1s)", noSource: true,
			wantErr: "server-load: report_interval needs a shared load source (Env.Loads) that whoever runs the strategy refreshes; none was given"},
		{name: "per response needs no source", spec: "server-load(choice_count=0)", noSource: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env{N: 3, Rand: newRand(1), Clock: newFakeClock(), Loads: NewLoadBoard()}
			if tt.noSource {
				env.Loads = nil
			}
			b := newChecked(t, tt.spec, env, tt.wantErr)
			if b == nil {
				return
			}
			got, ok := b.LoadReports()
			if ok != (tt.interval > 0) || got != tt.interval {
				t.Errorf("LoadReports() = %v, %v; want %v", got, ok, tt.interval)
			}
		})
	}
}

func TestLoadBoard(t *testing.T) {
	b := NewLoadBoard()
	if loads, v := b.Snapshot(); loads != nil || v != 0 {
		t.Fatalf("before the first Publish: %v, version %d", loads, v)
	}
	for want := uint64(1); want <= 3; want++ {
		in := []float64{1, 2, float64(want)}
		b.Publish(in)
		in[0] = 99 // the board keeps its own copy
		loads, v := b.Snapshot()
		if v != want || !slices.Equal(loads, []float64{1, 2, float64(want)}) {
			t.Fatalf("Snapshot() = %v, version %d; want [1 2 %d], version %d", loads, v, want, want)
		}
	}
}

// TestSharedServerLoadSelection checks the selection on the shared
// snapshot, with every assignment of loads to hosts and every host order,
// for full scan, two and three choices, with and without in flight.
func TestSharedServerLoadSelection(t *testing.T) {
	type state struct {
		snap     float64
		inflight int64
	}
	tests := []struct {
		name   string
		n      int
		hosts  []int // nil: all
		states []state
	}{
		{"distinct loads", 4, nil, []state{{0, 0}, {3, 0}, {1, 0}, {8, 0}}},
		{"loads and in flight", 4, nil, []state{{5, 0}, {1, 6}, {2, 2}, {0, 9}}},
		{"ties", 4, nil, []state{{2, 0}, {2, 1}, {1, 0}, {3, 0}}},
		{"subset of endpoints", 6, []int{1, 3, 4}, []state{{4, 0}, {2, 0}, {6, 0}}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(tt.n)
		}
		for _, withInflight := range []bool{false, true} {
			loads := make([]float64, len(tt.states))
			for i, s := range tt.states {
				loads[i] = s.snap
				if withInflight {
					loads[i] += float64(s.inflight)
				}
			}
			for _, k := range []int{0, 2, 3} {
				t.Run(fmt.Sprintf("%s/inflight=%v/choice_count=%d", tt.name, withInflight, k), func(t *testing.T) {
					sampledSelection(t, tt.n, hosts, loads, k, 4000, func(stateOf []int, r *rand.Rand) Picker {
						inflight := make([]int64, tt.n)
						s := newServerLoad(tt.n, k, withInflight, r, inflight)
						snap := make([]float64, tt.n)
						for ep, st := range stateOf {
							if st < 0 {
								snap[ep] = -1 // outside hosts: the best, if picked
								continue
							}
							snap[ep], inflight[ep] = tt.states[st].snap, tt.states[st].inflight
						}
						board := NewLoadBoard()
						board.Publish(snap)
						s.shared = board
						// A response's own report must change nothing.
						for ep := range tt.n {
							s.dones[ep](Outcome{Status: 200, Load: -100, HasLoad: true})
						}
						return s
					})
				})
			}
		}
	}
}

// TestSharedServerLoadScripted drives three replicas sharing one board
// through a script of refreshes and outcomes: between refreshes a full
// scan sends every pick of every replica to the same host, per-response
// reports change nothing, and a refresh moves them all at once; two
// choices never pick the most loaded host of the snapshot.
func TestSharedServerLoadScripted(t *testing.T) {
	type step struct {
		publish []float64 // nil: no refresh before the picks
		want    int       // the host every full-scan pick goes to
	}
	steps := []step{
		{nil, -1}, // before the first snapshot every host counts as 0: any
		{[]float64{3, 1, 4, 5}, 1},
		{nil, 1}, // stale: 1 keeps everything although its queue grows
		{[]float64{3, 9, 0, 5}, 2},
		{[]float64{0, 9, 7, math.NaN()}, 0}, // NaN counts as 0: a tie with 0, broken at random
	}
	board := NewLoadBoard()
	clock := newFakeClock()
	var full, two []*Balancer
	for r := range 3 {
		f, err := New("server-load(report_interval=1s,choice_count=0)", Env{N: 4, Rand: newRand(uint64(r + 1)), Clock: clock, Loads: board})
		if err != nil {
			t.Fatal(err)
		}
		p, err := New("server-load(report_interval=1s)", Env{N: 4, Rand: newRand(uint64(r + 10)), Clock: clock, Loads: board})
		if err != nil {
			t.Fatal(err)
		}
		full, two = append(full, f), append(two, p)
	}
	for i, st := range steps {
		if st.publish != nil {
			board.Publish(st.publish)
			clock.Advance(time.Second)
		}
		counts := make([]int, 4)
		for pick := range 60 {
			b := full[pick%3]
			ep, done := b.Pick(Request{})
			counts[ep]++
			// The answer reports a load that says the opposite.
			done(Outcome{Status: 200, Latency: time.Millisecond, Load: float64(100 - ep), HasLoad: true})
		}
		switch {
		case st.want >= 0 && i == len(steps)-1:
			if counts[0]+counts[3] != 60 || counts[0] == 0 || counts[3] == 0 {
				t.Errorf("step %d: picks %v, want all on the tied 0 and 3, both used", i, counts)
			}
		case st.want >= 0 && counts[st.want] != 60:
			t.Errorf("step %d: full-scan picks %v, want all 60 on %d", i, counts, st.want)
		case st.want < 0 && slices.Contains(counts, 0):
			t.Errorf("step %d: picks %v before any snapshot, want every host used", i, counts)
		}
		if st.publish == nil || i == len(steps)-1 {
			continue
		}
		worst := 0
		for ep, l := range st.publish {
			if l > st.publish[worst] {
				worst = ep
			}
		}
		twoCounts := make([]int, 4)
		for pick := range 300 {
			ep, done := two[pick%3].Pick(Request{})
			twoCounts[ep]++
			done(Outcome{Status: 200})
		}
		if twoCounts[worst] != 0 || twoCounts[st.want] < 100 {
			t.Errorf("step %d: two-choice picks %v on snapshot %v: want none on %d and at least a third on %d", i, twoCounts, st.publish, worst, st.want)
		}
	}
	for _, b := range append(full, two...) {
		if got := b.InFlight(); !slices.Equal(got, make([]int64, 4)) {
			t.Errorf("InFlight() = %v after every done", got)
		}
	}
}

func TestLeastInflightTiesFirst(t *testing.T) {
	tests := []struct {
		name     string
		inflight []int64
		hosts    []int // nil: every endpoint
		want     int
	}{
		{"unique min", []int64{3, 1, 0, 2}, nil, 2},
		{"ties: lowest id", []int64{2, 0, 3, 0, 0}, nil, 1},
		{"ties at both ends", []int64{1, 4, 4, 1}, nil, 0},
		{"all equal", []int64{7, 7, 7}, nil, 0},
		{"higher tie before lower min", []int64{2, 2, 1, 3, 1}, nil, 2},
		{"subset without the global min", []int64{0, 5, 1, 1}, []int{1, 2, 3}, 2},
		{"single host", []int64{9}, nil, 0},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(len(tt.inflight))
		}
		for _, p := range sampledPerms(len(hosts)) {
			order := make([]int, len(hosts))
			for i, j := range p {
				order[i] = hosts[j]
			}
			t.Run(fmt.Sprintf("%s/%v", tt.name, order), func(t *testing.T) {
				l := &leastInflight{rand: newRand(1), inflight: tt.inflight, first: true}
				for range 20 {
					if ep, _ := l.Pick(Request{}, order); ep != tt.want {
						t.Fatalf("in flight %v, hosts %v: picked %d, want %d", tt.inflight, order, ep, tt.want)
					}
				}
			})
		}
	}
}

func TestLeastInflightTiesParam(t *testing.T) {
	for _, tt := range []struct {
		spec    string
		first   bool
		wantErr string
	}{
		{spec: "least-inflight"},
		{spec: "least-inflight(ties=random)"},
		{spec: "least-inflight(ties=first)", first: true},
		{spec: "least-inflight(ties=last)", wantErr: `least-inflight: ties: want random or first, got "last"`},
		{spec: "least-inflight(order=first)", wantErr: `least-inflight: unknown parameter "order" (allowed: ties)`},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			b := newChecked(t, tt.spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}, tt.wantErr)
			if b == nil {
				return
			}
			if got := b.picker.(*leastInflight).first; got != tt.first {
				t.Errorf("first = %v, want %v", got, tt.first)
			}
		})
	}
}

// TestLeastInflightTiesFirstScripted holds requests through a Balancer:
// with ties=first equal counts fill up from the lowest id, one request per
// host per round, and a done frees its host to be the next pick.
func TestLeastInflightTiesFirstScripted(t *testing.T) {
	b, err := New("least-inflight(ties=first)", Env{N: 3, Rand: newRand(1), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	var held []func(Outcome)
	var got []int
	for range 7 {
		ep, done := b.Pick(Request{})
		got, held = append(got, ep), append(held, done)
	}
	if want := []int{0, 1, 2, 0, 1, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("picks %v, want %v", got, want)
	}
	held[4](Outcome{Status: 200}) // in flight 3, 1, 2
	if ep, done := b.Pick(Request{}); ep != 1 {
		t.Errorf("after a done on 1: picked %d, want 1", ep)
	} else {
		held[4] = done
	}
	for _, done := range held {
		done(Outcome{Status: 200})
	}
	if got := b.InFlight(); !slices.Equal(got, make([]int64, 3)) {
		t.Errorf("InFlight() = %v after every done", got)
	}
}

// BenchmarkSharedLoadPickDone measures Pick and done of the strategies
// added for herding, at 10, 100 and 1000 endpoints, beside
// BenchmarkPickDone; the board is refreshed every 1000 picks.
func BenchmarkSharedLoadPickDone(b *testing.B) {
	specs := []string{"server-load(report_interval=1s)", "server-load(report_interval=1s,choice_count=0)", "least-inflight(ties=first)"}
	for _, spec := range specs {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", spec, n), func(b *testing.B) {
				board := NewLoadBoard()
				lb, err := New(spec, Env{N: n, Rand: newRand(1), Clock: newFakeClock(), Loads: board})
				if err != nil {
					b.Fatal(err)
				}
				r := newRand(2)
				snap := make([]float64, n)
				ok := Outcome{Status: 200, Latency: 10 * time.Millisecond, Load: 3, HasLoad: true}
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					if i%1000 == 0 {
						for ep := range snap {
							snap[ep] = float64(r.IntN(16))
						}
						board.Publish(snap)
					}
					i++
					_, done := lb.Pick(Request{})
					done(ok)
				}
			})
		}
	}
}

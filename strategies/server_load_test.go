package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestServerLoadParams(t *testing.T) {
	tests := []struct {
		spec     string
		count    int
		inflight bool
		wantErr  string // "" for none
	}{
		{spec: "server-load", count: 2},
		{spec: "server-load(choice_count=0,inflight=true)", count: 0, inflight: true},
		{spec: "server-load(choice_count=3,inflight=off)", count: 3},
		{spec: "server-load(choice_count=1)", wantErr: `server-load: choice_count: want 0 (scan every host) or an integer >= 2, got "1"`},
		{spec: "server-load(inflight=maybe)", wantErr: `server-load: inflight: want true or false, got "maybe"`},
		{spec: "server-load(load=1)", wantErr: `server-load: unknown parameter "load" (allowed: choice_count, inflight, report_interval)`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b := newChecked(t, tt.spec, Env{N: 3, Rand: newRand(1), Clock: newFakeClock()}, tt.wantErr)
			if b == nil {
				return
			}
			s := b.picker.(*serverLoad)
			if s.choose.count != tt.count || s.addInflight != tt.inflight {
				t.Errorf("choice count %d, inflight %v; want %d, %v", s.choose.count, s.addInflight, tt.count, tt.inflight)
			}
		})
	}
}

// TestServerLoadScripted feeds outcomes to the endpoints and checks every
// endpoint's remembered load, and the load used for selection, after each.
func TestServerLoadScripted(t *testing.T) {
	type step struct {
		ep       int
		outcome  Outcome
		inflight []int64
		reported []float64 // after the step
		load     []float64 // with inflight=true
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"reports replace the last value", []step{
			{0, Outcome{Status: 200, Load: 4, HasLoad: true}, []int64{0, 0, 0}, []float64{4, 0, 0}, []float64{4, 0, 0}},
			{2, Outcome{Status: 200, Load: 7, HasLoad: true}, []int64{1, 0, 0}, []float64{4, 0, 7}, []float64{5, 0, 7}},
			{0, Outcome{Status: 200, Load: 1, HasLoad: true}, []int64{0, 3, 0}, []float64{1, 0, 7}, []float64{1, 3, 7}},
			{2, Outcome{Status: 200, Load: 0, HasLoad: true}, []int64{0, 0, 2}, []float64{1, 0, 0}, []float64{1, 0, 2}},
		}},
		{"outcomes without a report leave the value", []step{
			{1, Outcome{Status: 200, Load: 9, HasLoad: true}, []int64{0, 0, 0}, []float64{0, 9, 0}, []float64{0, 9, 0}},
			{1, Outcome{Status: 503, Load: 0}, []int64{0, 0, 0}, []float64{0, 9, 0}, []float64{0, 9, 0}},
			{1, Outcome{Err: refused.Err}, []int64{0, 1, 0}, []float64{0, 9, 0}, []float64{0, 10, 0}},
			{1, Outcome{Timeout: true, Latency: time.Second}, []int64{0, 0, 0}, []float64{0, 9, 0}, []float64{0, 9, 0}},
		}},
		{"a failed response may still report", []step{
			{2, Outcome{Status: 503, Load: 12, HasLoad: true}, []int64{0, 0, 0}, []float64{0, 0, 12}, []float64{0, 0, 12}},
		}},
		{"a report that is not a number is ignored", []step{
			{0, Outcome{Status: 200, Load: 2.5, HasLoad: true}, []int64{0, 0, 0}, []float64{2.5, 0, 0}, []float64{2.5, 0, 0}},
			{0, Outcome{Status: 200, Load: math.NaN(), HasLoad: true}, []int64{0, 0, 0}, []float64{2.5, 0, 0}, []float64{2.5, 0, 0}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inflight := make([]int64, 3)
			s := newServerLoad(3, 2, true, newRand(1), inflight)
			for i, st := range tt.steps {
				copy(inflight, st.inflight)
				s.dones[st.ep](st.outcome)
				if !slices.Equal(s.reported, st.reported) {
					t.Fatalf("step %d: reported %v, want %v", i, s.reported, st.reported)
				}
				for ep, want := range st.load {
					if got := s.load(ep); got != want {
						t.Fatalf("step %d: load of %d = %g, want %g", i, ep, got, want)
					}
				}
			}
		})
	}
}

func TestServerLoadSelection(t *testing.T) {
	type state struct {
		reported float64
		inflight int64
	}
	tests := []struct {
		name   string
		n      int
		hosts  []int // nil: all
		states []state
	}{
		{"distinct reports", 4, nil, []state{{0, 0}, {3, 0}, {1, 0}, {8, 0}}},
		{"reports and in flight", 4, nil, []state{{5, 0}, {1, 6}, {2, 2}, {0, 9}}},
		{"ties", 4, nil, []state{{2, 0}, {2, 1}, {1, 0}, {3, 0}}},
		{"fractional and equal", 3, nil, []state{{0.5, 0}, {0.5, 0}, {0.5, 0}}},
		{"subset of endpoints", 6, []int{1, 3, 4}, []state{{4, 0}, {2, 0}, {6, 0}}},
		{"one host", 2, []int{0}, []state{{100, 5}}},
	}
	for _, tt := range tests {
		hosts := tt.hosts
		if hosts == nil {
			hosts = seq(tt.n)
		}
		for _, withInflight := range []bool{false, true} {
			loads := make([]float64, len(tt.states))
			for i, s := range tt.states {
				loads[i] = s.reported
				if withInflight {
					loads[i] += float64(s.inflight)
				}
			}
			for _, k := range []int{0, 2, 3} {
				t.Run(fmt.Sprintf("%s/inflight=%v/choice_count=%d", tt.name, withInflight, k), func(t *testing.T) {
					sampledSelection(t, tt.n, hosts, loads, k, 4000, func(stateOf []int, r *rand.Rand) Picker {
						inflight := make([]int64, tt.n)
						s := newServerLoad(tt.n, k, withInflight, r, inflight)
						for ep, st := range stateOf {
							if st < 0 {
								s.reported[ep] = -1 // outside hosts: the best, if picked
								continue
							}
							s.reported[ep], inflight[ep] = tt.states[st].reported, tt.states[st].inflight
						}
						return s
					})
				})
			}
		}
	}
}

// TestServerLoadThroughBalancer simulates backends that report their
// requests in flight: endpoint 0 always reports 50, the others report the
// requests this Balancer holds on them. Endpoint 0 is never picked (with
// two choices it always meets an endpoint reporting at most 6), and with
// full scan and inflight=true held requests spread evenly over the others.
func TestServerLoadThroughBalancer(t *testing.T) {
	tests := []struct {
		spec string
	}{{"server-load(choice_count=0)"}, {"server-load(choice_count=0,inflight=true)"}, {"server-load(inflight=true)"}}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			b, err := New(tt.spec, Env{N: 4, Rand: newRand(6), Clock: newFakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			_, done := b.Pick(Request{})
			done(Outcome{Status: 200, Load: 0, HasLoad: true})
			b.picker.(*serverLoad).dones[0](Outcome{Status: 200, Load: 50, HasLoad: true})
			// Release every request at once, each reporting its endpoint's
			// load as it answers, then hold a new batch.
			for round := range 50 {
				var held []func(Outcome)
				var eps []int
				for range 6 {
					ep, done := b.Pick(Request{})
					held = append(held, done)
					eps = append(eps, ep)
				}
				inflight := b.InFlight()
				if inflight[0] > 0 {
					t.Fatalf("round %d: in flight %v: picked the endpoint reporting 50", round, inflight)
				}
				if tt.spec == "server-load(choice_count=0,inflight=true)" && slices.Max(inflight[1:]) > 2 {
					t.Fatalf("round %d: in flight %v, want 2 on each of 1..3", round, inflight)
				}
				for i, done := range held {
					load := float64(b.InFlight()[eps[i]] - 1)
					if eps[i] == 0 {
						load = 50
					}
					done(Outcome{Status: 200, Load: load, HasLoad: true})
				}
			}
			if got := b.InFlight(); !slices.Equal(got, make([]int64, 4)) {
				t.Errorf("InFlight() = %v after every done", got)
			}
		})
	}
}

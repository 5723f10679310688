package strategies

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func init() {
	benchSpecs = append(benchSpecs, "round-robin+circuit(max_inflight=4)", "p2c+circuit(max_inflight=4)")
}

func TestCircuitParse(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"ok", "round-robin+circuit(max_inflight=20,duration=5s)", ""},
		{"default duration", "p2c+circuit(max_inflight=1)", ""},
		{"missing limit", "round-robin+circuit", "circuit: max_inflight: required, want an integer >= 1 (the most requests in flight to one endpoint)"},
		{"zero limit", "round-robin+circuit(max_inflight=0)", `circuit: max_inflight: want an integer >= 1, got "0"`},
		{"bad limit", "round-robin+circuit(max_inflight=x)", `circuit: max_inflight: want an integer >= 1, got "x"`},
		{"bad duration", "round-robin+circuit(max_inflight=2,duration=-1s)", `circuit: duration: want a duration > 0, got "-1s"`},
		{"unknown", "round-robin+circuit(max_inflight=2,half_open=1)", `circuit: unknown parameter "half_open" (allowed: max_inflight, duration)`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParse(t, tc.spec, tc.want) })
	}
}

// circuitStep is one step of a scripted circuit test: advance the clock,
// then pick (want the endpoint) or finish the oldest request in flight to
// an endpoint.
type circuitStep struct {
	advance time.Duration
	pick    int // endpoint wanted; -2 when the step picks nothing
	finish  int // endpoint whose oldest request ends; -2 for none
}

func pickStep(want int) circuitStep        { return circuitStep{pick: want, finish: -2} }
func finishStep(ep int) circuitStep        { return circuitStep{pick: -2, finish: ep} }
func waitStep(d time.Duration) circuitStep { return circuitStep{advance: d, pick: -2, finish: -2} }

func TestCircuitScripted(t *testing.T) {
	ev := func(at time.Duration, ep int, kind string) Event {
		e := Event{Time: epoch0.Add(at), Endpoint: ep, Kind: kind}
		if kind == EventEject {
			e.Detail = circuitReason
		}
		return e
	}
	for _, tc := range []struct {
		name        string
		spec        string
		n           int
		steps       []circuitStep
		wantEvents  []Event
		wantEjected []int
	}{
		{
			name: "the pick that reaches the limit opens; round robin skips the endpoint until the time is up",
			spec: "round-robin+circuit(max_inflight=2,duration=5s)",
			n:    3,
			steps: []circuitStep{
				pickStep(0), pickStep(1), pickStep(2),
				finishStep(1), finishStep(2),
				pickStep(0), // 0 reaches 2 in flight: out
				pickStep(1), pickStep(2), pickStep(1), pickStep(2),
				// 1 and 2 reached 2 as well: all out. Those below the limit
				// are given: 0 alone, until it holds 2 too.
				finishStep(0), finishStep(0),
				pickStep(0), pickStep(0),
				// At 5 s every endpoint still holds 2: out another 5 s.
				waitStep(5 * time.Second),
				finishStep(0), finishStep(0),
				// At 10 s 0 is back; 1 and 2 still hold 2. 0 reaches the
				// limit again.
				waitStep(5 * time.Second),
				pickStep(0), pickStep(0),
			},
			wantEvents: []Event{
				ev(0, 0, EventEject), ev(0, 1, EventEject), ev(0, 2, EventEject),
				ev(10*time.Second, 0, EventReadmit), ev(10*time.Second, 0, EventEject),
			},
			wantEjected: []int{0, 1, 2},
		},
		{
			name: "requests that end do not close the circuit early",
			spec: "round-robin+circuit(max_inflight=1,duration=10s)",
			n:    2,
			steps: []circuitStep{
				pickStep(0), finishStep(0),
				pickStep(1), // the only host left; opens too
				finishStep(1),
				waitStep(9 * time.Second),
				pickStep(0), finishStep(0), // all out: every host given
				waitStep(time.Second),
				pickStep(1), // both re-admitted; 1 reopens at once (limit 1)
			},
			wantEvents: []Event{
				ev(0, 0, EventEject), ev(0, 1, EventEject),
				ev(10*time.Second, 0, EventReadmit), ev(10*time.Second, 1, EventReadmit),
				ev(10*time.Second, 1, EventEject),
			},
			wantEjected: []int{1},
		},
		{
			name: "a burst opens every circuit: those below the limit are given until one closes",
			spec: "round-robin+circuit(max_inflight=2,duration=5s)",
			n:    3,
			steps: []circuitStep{
				pickStep(0), pickStep(1), pickStep(2),
				pickStep(0), pickStep(1), pickStep(2), // all out
				finishStep(1), finishStep(1),
				pickStep(1), pickStep(1),
				finishStep(2), finishStep(2),
				pickStep(2), pickStep(2),
			},
			wantEvents:  []Event{ev(0, 0, EventEject), ev(0, 1, EventEject), ev(0, 2, EventEject)},
			wantEjected: []int{0, 1, 2},
		},
		{
			name: "an endpoint below the limit is never taken out",
			spec: "round-robin+circuit(max_inflight=3)",
			n:    2,
			steps: []circuitStep{
				pickStep(0), pickStep(1), pickStep(0), pickStep(1),
				finishStep(0), finishStep(1),
				pickStep(0), pickStep(1), finishStep(0), finishStep(1),
				pickStep(0), pickStep(1),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			var events []Event
			b := newChecked(t, tc.spec, Env{N: tc.n, Rand: newRand(1), Clock: clock, Events: func(e Event) { events = append(events, e) }}, "")
			pending := make([][]func(Outcome), tc.n)
			for i, s := range tc.steps {
				clock.Advance(s.advance)
				if s.pick != -2 {
					ep, done := b.Pick(Request{})
					if ep != s.pick {
						t.Fatalf("step %d: picked %d, want %d", i, ep, s.pick)
					}
					pending[ep] = append(pending[ep], done)
				}
				if s.finish != -2 {
					pending[s.finish][0](ok200)
					pending[s.finish] = pending[s.finish][1:]
				}
			}
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("events:\n got %v\nwant %v", events, tc.wantEvents)
			}
			opened := 0
			for _, e := range tc.wantEvents {
				if e.Kind == EventEject {
					opened++
				}
			}
			if got := b.Ejections(); got != opened {
				t.Errorf("Ejections() = %d, want %d", got, opened)
			}
			if got := b.Ejected(); !slices.Equal(got, tc.wantEjected) {
				t.Errorf("Ejected() = %v, want %v", got, tc.wantEjected)
			}
		})
	}
}

// TestCircuitLimitHolds drives random picks and dones: no endpoint ever
// holds more than max_inflight requests unless every endpoint held as many,
// none that is out is picked unless all are, and the in-flight counts
// return to zero.
func TestCircuitLimitHolds(t *testing.T) {
	for _, inner := range []string{"round-robin", "p2c", "least-inflight", "random"} {
		for _, limit := range []int{1, 3, 8} {
			t.Run(fmt.Sprintf("%s/max_inflight=%d", inner, limit), func(t *testing.T) {
				const n = 6
				clock := newFakeClock()
				r := newRand(7)
				b := newChecked(t, fmt.Sprintf("%s+circuit(max_inflight=%d,duration=50ms)", inner, limit), Env{N: n, Rand: newRand(3), Clock: clock}, "")
				var open []func(Outcome)
				for i := range 20000 {
					clock.Advance(time.Duration(r.IntN(3)) * time.Millisecond)
					// Sweep applies the re-admissions the Pick would, so
					// out is what the Pick sees.
					b.Sweep(clock.Now())
					out := b.Ejected()
					allOut := len(out) == n
					before := b.InFlight()
					allFull := !slices.ContainsFunc(before, func(v int64) bool { return v < int64(limit) })
					ep, done := b.Pick(Request{})
					if ep == NoHost {
						t.Fatalf("pick %d: NoHost", i)
					}
					if !allOut && slices.Contains(out, ep) {
						t.Fatalf("pick %d: endpoint %d picked while out (out: %v)", i, ep, out)
					}
					if got := b.InFlight()[ep]; got > int64(limit) && !allFull {
						t.Fatalf("pick %d: endpoint %d holds %d requests, limit %d, and not every endpoint was full (%v)", i, ep, got, limit, before)
					}
					if allOut && !allFull && before[ep] >= int64(limit) {
						t.Fatalf("pick %d: all out, endpoint %d at the limit picked while others were below it (%v)", i, ep, before)
					}
					open = append(open, done)
					for len(open) > 0 && r.IntN(2) == 0 {
						k := r.IntN(len(open))
						open[k](ok200)
						open = slices.Delete(open, k, k+1)
					}
				}
				for _, done := range open {
					done(ok200)
				}
				for ep, v := range b.InFlight() {
					if v != 0 {
						t.Errorf("endpoint %d: %d in flight after every done", ep, v)
					}
				}
				if b.Ejections() == 0 {
					t.Errorf("no circuit ever opened")
				}
			})
		}
	}
}

// TestCircuitRescuesRoundRobin replays the slow-instance story in virtual
// time: one endpoint takes ten times as long; behind the circuit it gets far
// less than round robin's share, also when a burst opened every circuit.
func TestCircuitRescuesRoundRobin(t *testing.T) {
	const n = 5
	for _, tc := range []struct {
		name               string
		spec               string
		burst              int // picks at the start, all at once
		minShare, maxShare float64
	}{
		{"round robin", "round-robin", 0, 0.19, 0.21},
		{"breaker", "round-robin+circuit(max_inflight=5,duration=1s)", 0, 0, 0.05},
		// A burst at the start (a client dialling its connections) opens
		// every circuit at once; the slow endpoint is still kept at the limit.
		{"breaker after a burst", "round-robin+circuit(max_inflight=5,duration=1s)", 100, 0, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			b := newChecked(t, tc.spec, Env{N: n, Rand: newRand(1), Clock: clock}, "")
			type req struct {
				end  time.Duration
				done func(Outcome)
			}
			var inflight []req
			var now time.Duration
			counts := make([]int, n)
			const picks = 20000
			for i := range picks {
				if i >= tc.burst {
					now += time.Millisecond // 1000 req/s
					clock.Advance(time.Millisecond)
				}
				kept := inflight[:0]
				for _, r := range inflight {
					if r.end <= now {
						r.done(ok200)
					} else {
						kept = append(kept, r)
					}
				}
				inflight = kept
				ep, done := b.Pick(Request{})
				counts[ep]++
				service := 4 * time.Millisecond
				if ep == 0 {
					service = 40 * time.Millisecond // no queue: an unlimited server
				}
				inflight = append(inflight, req{end: now + service, done: done})
			}
			share := float64(counts[0]) / picks
			if share < tc.minShare || share > tc.maxShare {
				t.Errorf("slow endpoint's share %.4f, want in [%v, %v]", share, tc.minShare, tc.maxShare)
			}
		})
	}
}

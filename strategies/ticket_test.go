package strategies

import (
	"slices"
	"testing"
	"time"
)

// TestTicketMatchesDone drives two Balancers of the same stateful spec and
// seed through the same requests, one with Pick and its done, the other
// with PickTicket and Finish: every pick, every count in flight and every
// ejection agree.
func TestTicketMatchesDone(t *testing.T) {
	for _, spec := range []string{"p2c", "least-inflight", "peak-ewma", "round-robin+eject(consecutive=3,duration=1s)"} {
		t.Run(spec, func(t *testing.T) {
			clockA, clockB := newFakeClock(), newFakeClock()
			a, err := New(spec, Env{N: 5, Clock: clockA, Rand: newRand(7)})
			if err != nil {
				t.Fatal(err)
			}
			b, err := New(spec, Env{N: 5, Clock: clockB, Rand: newRand(7)})
			if err != nil {
				t.Fatal(err)
			}
			type flight struct {
				done func(Outcome)
				tk   Ticket
			}
			var open []flight
			rng := newRand(1)
			for i := range 2000 {
				clockA.Advance(time.Millisecond)
				clockB.Advance(time.Millisecond)
				epA, done := a.Pick(Request{})
				tk := b.PickTicket(Request{})
				if epA != tk.Endpoint() {
					t.Fatalf("request %d: Pick chose %d, PickTicket %d", i, epA, tk.Endpoint())
				}
				open = append(open, flight{done, tk})
				for len(open) > 0 && rng.IntN(3) > 0 {
					j := rng.IntN(len(open))
					f := open[j]
					open = append(open[:j], open[j+1:]...)
					o := Outcome{Status: 200, Latency: time.Duration(rng.IntN(20)) * time.Millisecond}
					if f.tk.Endpoint() == 0 {
						o.Status = 503
					}
					f.done(o)
					b.Finish(f.tk, o)
				}
				if ga, gb := a.InFlight(), b.InFlight(); !slices.Equal(ga, gb) {
					t.Fatalf("request %d: in flight %v with done, %v with Finish", i, ga, gb)
				}
			}
			if a.Ejections() != b.Ejections() || (spec == "round-robin+eject(consecutive=3,duration=1s)" && a.Ejections() == 0) {
				t.Errorf("ejections: %d with done, %d with Finish", a.Ejections(), b.Ejections())
			}
		})
	}
}

// TestTicketNoAlloc: a p2c pick and its Finish allocate nothing.
func TestTicketNoAlloc(t *testing.T) {
	b, err := New("p2c", Env{N: 10, Rand: newRand(3)})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		b.Finish(b.PickTicket(Request{}), Outcome{Status: 200})
	}); n != 0 {
		t.Errorf("PickTicket and Finish allocate %v times a request, want 0", n)
	}
}

// TestSerialMatches: a serial Balancer picks as a locked one does.
func TestSerialMatches(t *testing.T) {
	a, err := New("p2c", Env{N: 7, Rand: newRand(9)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New("p2c", Env{N: 7, Rand: newRand(9)})
	if err != nil {
		t.Fatal(err)
	}
	b.SetSerial()
	var openA, openB []Ticket
	for i := range 1000 {
		ta, tb := a.PickTicket(Request{}), b.PickTicket(Request{})
		if ta.Endpoint() != tb.Endpoint() {
			t.Fatalf("request %d: locked %d, serial %d", i, ta.Endpoint(), tb.Endpoint())
		}
		openA, openB = append(openA, ta), append(openB, tb)
		if i%3 == 2 {
			a.Finish(openA[0], Outcome{Status: 200})
			b.Finish(openB[0], Outcome{Status: 200})
			openA, openB = openA[1:], openB[1:]
		}
	}
	if !slices.Equal(a.InFlight(), b.InFlight()) {
		t.Errorf("in flight: locked %v, serial %v", a.InFlight(), b.InFlight())
	}
}

package engine

import (
	"math"
	"testing"
	"time"
)

func TestConstantSchedule(t *testing.T) {
	s := &ConstantSchedule{PerSecond: 1000}
	tests := []struct {
		name    string
		elapsed time.Duration
		hits    uint64
		want    time.Duration
	}{
		{"first request at once", 0, 0, 0},
		{"on time waits for the next slot", 0, 1, time.Millisecond},
		{"ahead waits the rest", 500 * time.Microsecond, 1, 500 * time.Microsecond},
		{"behind does not wait", 5 * time.Millisecond, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stop := s.Pace(tt.elapsed, tt.hits)
			if stop || got != tt.want {
				t.Errorf("Pace(%v, %d) = %v, %v; want %v, false", tt.elapsed, tt.hits, got, stop, tt.want)
			}
		})
	}
	if got := s.Count(time.Second); got != 1000 {
		t.Errorf("Count(1s) = %d, want 1000", got)
	}
}

func TestPoissonScheduleDeterministicAndMean(t *testing.T) {
	a := NewPoissonSchedule(4000, 7)
	b := NewPoissonSchedule(4000, 7)
	c := NewPoissonSchedule(4000, 8)
	const n = 40000
	same := true
	var prev time.Duration
	for k := uint64(0); k < n; k++ {
		da, _ := a.Due(k)
		db, _ := b.Due(k)
		dc, _ := c.Due(k)
		if da != db {
			t.Fatalf("arrival %d differs between equal seeds: %v vs %v", k, da, db)
		}
		if da != dc {
			same = false
		}
		if da < prev {
			t.Fatalf("arrival %d at %v is before arrival %d at %v", k, da, k-1, prev)
		}
		prev = da
	}
	if same {
		t.Error("different seeds gave the same schedule")
	}
	// 40000 arrivals at 4000/s take about 10 s; the sum of n exponential gaps
	// has relative standard deviation 1/sqrt(n) = 0.5%.
	last, _ := a.Due(n - 1)
	if math.Abs(last.Seconds()-10) > 0.2 {
		t.Errorf("40000 arrivals at 4000/s ended at %v, want about 10s", last)
	}
	// Count replays the same sequence.
	if got := a.Count(last); got != n-1 {
		t.Errorf("Count(arrival %d) = %d, want %d", n-1, got, n-1)
	}
	if got := a.Count(last + 1); got != n {
		t.Errorf("Count(just after arrival %d) = %d, want %d", n-1, got, n)
	}
	// Pace waits exactly until the due time.
	d5, _ := a.Due(5)
	if w, _ := a.Pace(d5-time.Millisecond, 5); w != time.Millisecond {
		t.Errorf("Pace 1ms before arrival 5 = %v, want 1ms", w)
	}
}

func TestPoissonScheduleForgetsOnlyTheDistantPast(t *testing.T) {
	p := NewPoissonSchedule(1e6, 1)
	if _, ok := p.Due(poissonWindow + 10); !ok {
		t.Fatal("latest arrival unknown")
	}
	if _, ok := p.Due(5); ok {
		t.Error("arrival beyond the window still reported")
	}
	if _, ok := p.Due(20); !ok {
		t.Error("arrival inside the window not reported")
	}
}

// TestStrideSplitsExactly: the generators' shares of a schedule, together,
// are the schedule: every arrival once, at its time, and their counts add
// up to the schedule's at any time.
func TestStrideSplitsExactly(t *testing.T) {
	for _, gens := range []int{1, 2, 3, 4} {
		whole := NewSchedule("poisson", 1000, 7)
		shares := make([]Schedule, gens)
		for g := range shares {
			shares[g] = Stride(NewSchedule("poisson", 1000, 7), g, gens)
		}
		for k := uint64(0); k < 5000; k++ {
			want, _ := whole.Due(k)
			got, _ := shares[k%uint64(gens)].Due(k / uint64(gens))
			if got != want {
				t.Fatalf("%d generators: arrival %d at %v, want %v", gens, k, got, want)
			}
		}
		for _, d := range []time.Duration{0, time.Millisecond, 777 * time.Millisecond, 3 * time.Second} {
			var sum uint64
			for _, s := range shares {
				sum += s.Count(d)
			}
			if want := whole.Count(d); sum != want {
				t.Errorf("%d generators: counts before %v add up to %d, want %d", gens, d, sum, want)
			}
		}
	}
}

func TestUntilStopsAtTheFirstArrivalAtTheEnd(t *testing.T) {
	s := &ConstantSchedule{PerSecond: 10} // arrivals at 0, 0.1 s, 0.2 s, ...
	p := Until(s, time.Second)
	for hits := uint64(0); hits < 10; hits++ {
		// However late the attack is, every arrival before the end is sent.
		if wait, stop := p.Pace(2*time.Second, hits); stop || wait != 0 {
			t.Fatalf("arrival %d: wait %v, stop %v; want it sent at once", hits, wait, stop)
		}
	}
	if _, stop := p.Pace(900*time.Millisecond, 10); !stop {
		t.Error("arrival 10, due at the end, not stopped")
	}
	if wait, _ := p.Pace(250*time.Millisecond, 3); wait != 50*time.Millisecond {
		t.Errorf("arrival 3 at 250 ms: wait %v, want 50ms", wait)
	}
}

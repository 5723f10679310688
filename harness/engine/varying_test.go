package engine

import (
	"math"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
)

// burst is 10 s at 2000/s, a 5 s ramp to 8000/s, a 5 s hold, a 10 s ramp
// down to 2000/s: 2000*10 + 5000*5 + 8000*5 + 5000*10 = 135000 arrivals.
func burst() *experiments.RateProfile {
	return &experiments.RateProfile{Start: 2000, Stages: []experiments.RateStage{
		{Duration: 10 * time.Second, Target: 2000},
		{Duration: 5 * time.Second, Target: 8000},
		{Duration: 5 * time.Second, Target: 8000},
		{Duration: 10 * time.Second, Target: 2000},
	}}
}

// stageWindows are burst's stages as [from, to) with their expected counts.
var stageWindows = []struct {
	from, to time.Duration
	want     float64
}{
	{0, 10 * time.Second, 20000},
	{10 * time.Second, 15 * time.Second, 25000},
	{15 * time.Second, 20 * time.Second, 40000},
	{20 * time.Second, 30 * time.Second, 50000},
}

func TestEvenScheduleFollowsTheStages(t *testing.T) {
	s := &EvenSchedule{Curve: burst()}
	for _, w := range stageWindows {
		got := float64(s.Count(w.to) - s.Count(w.from))
		// Even spacing: each window holds its integral, up to the one
		// arrival that straddles an edge.
		if math.Abs(got-w.want) > 1 {
			t.Errorf("[%v, %v): %v arrivals, want %v", w.from, w.to, got, w.want)
		}
	}
	tests := []struct {
		name string
		at   time.Duration
		gap  time.Duration // between the arrivals around at
	}{
		{"first stage holds 2000/s", 5 * time.Second, 500 * time.Microsecond},
		{"halfway up the ramp, 5000/s", 12500 * time.Millisecond, 200 * time.Microsecond},
		{"top holds 8000/s", 17 * time.Second, 125 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := s.Count(tt.at)
			a, _ := s.Due(k)
			b, _ := s.Due(k + 1)
			if d := b - a; math.Abs(float64(d-tt.gap)) > 2e3 {
				t.Errorf("gap at %v = %v, want %v", tt.at, d, tt.gap)
			}
		})
	}
}

// TestEvenScheduleCountIsExact: Count(d) is the number of arrivals Due
// before d, at every d, also right at an arrival.
func TestEvenScheduleCountIsExact(t *testing.T) {
	s := &EvenSchedule{Curve: burst()}
	for k := uint64(0); k < 135000; k += 997 {
		due, _ := s.Due(k)
		if got := s.Count(due); got != k {
			t.Fatalf("Count(arrival %d at %v) = %d, want %d", k, due, got, k)
		}
		if got := s.Count(due + 1); got != k+1 {
			t.Fatalf("Count(just after arrival %d) = %d, want %d", k, got, k+1)
		}
	}
}

func TestVaryingPoissonScheduleFollowsTheStages(t *testing.T) {
	a := NewVaryingPoissonSchedule(burst(), 7)
	b := NewVaryingPoissonSchedule(burst(), 7)
	c := NewVaryingPoissonSchedule(burst(), 8)
	var prev time.Duration
	same := true
	for k := uint64(0); k < 140000; k++ {
		da, _ := a.Due(k)
		db, _ := b.Due(k)
		dc, _ := c.Due(k)
		if da != db {
			t.Fatalf("arrival %d differs between equal seeds: %v vs %v", k, da, db)
		}
		same = same && da == dc
		if da < prev {
			t.Fatalf("arrival %d at %v is before arrival %d at %v", k, da, k-1, prev)
		}
		prev = da
	}
	if same {
		t.Error("different seeds gave the same schedule")
	}
	for _, w := range stageWindows {
		got := float64(a.Count(w.to) - a.Count(w.from))
		// Poisson: the count has standard deviation sqrt(want); 4 of them.
		if tol := 4 * math.Sqrt(w.want); math.Abs(got-w.want) > tol {
			t.Errorf("[%v, %v): %v arrivals, want %v ± %.0f", w.from, w.to, got, w.want, tol)
		}
	}
	// Count agrees with Due, arrival by arrival.
	for k := uint64(0); k < 135000; k += 4999 {
		due, _ := a.Due(k)
		if got := a.Count(due); got != k {
			t.Fatalf("Count(arrival %d at %v) = %d, want %d", k, due, got, k)
		}
	}
	if got := a.Rate(17 * time.Second); got != 8000 {
		t.Errorf("Rate(17s) = %v, want 8000", got)
	}
}

// TestConstantRateUnchanged: an experiment without stages gets the very
// schedules it got before stages existed.
func TestConstantRateUnchanged(t *testing.T) {
	for _, arrival := range []string{experiments.ArrivalPoisson, experiments.ArrivalConstant} {
		exp := &experiments.Experiment{Arrival: arrival, Rate: 4000, Seed: 3}
		got, want := ExperimentSchedule(exp), NewSchedule(arrival, 4000, 3)
		for k := uint64(0); k < 20000; k++ {
			g, _ := got.Due(k)
			w, _ := want.Due(k)
			if g != w {
				t.Fatalf("%s: arrival %d at %v, want %v", arrival, k, g, w)
			}
		}
	}
	// A held profile is the constant schedule, to within a nanosecond.
	flat := &experiments.RateProfile{Start: 1000, Stages: []experiments.RateStage{{Duration: 10 * time.Second, Target: 1000}}}
	even, constant := &EvenSchedule{Curve: flat}, &ConstantSchedule{PerSecond: 1000}
	for k := uint64(0); k < 12000; k += 7 {
		g, _ := even.Due(k)
		w, _ := constant.Due(k)
		if d := g - w; d < -1 || d > 1 {
			t.Fatalf("arrival %d at %v, constant schedule has %v", k, g, w)
		}
	}
}

// TestStrideSplitsStagesExactly: generators' shares of a staged schedule
// send its arrivals, each once, and their counts add up.
func TestStrideSplitsStagesExactly(t *testing.T) {
	for _, arrival := range []string{experiments.ArrivalPoisson, experiments.ArrivalConstant} {
		exp := &experiments.Experiment{Arrival: arrival, Profile: burst(), Seed: 5, Duration: 30 * time.Second}
		whole := ExperimentSchedule(exp)
		const gens = 3
		shares := make([]Schedule, gens)
		for g := range shares {
			shares[g] = Stride(ExperimentSchedule(exp), g, gens)
		}
		for k := uint64(0); k < 30000; k += 3 {
			want, _ := whole.Due(k)
			got, _ := shares[k%gens].Due(k / gens)
			if got != want {
				t.Fatalf("%s: arrival %d at %v, want %v", arrival, k, got, want)
			}
		}
		for _, d := range []time.Duration{time.Millisecond, 12 * time.Second, 30 * time.Second} {
			var sum uint64
			for _, s := range shares {
				sum += s.Count(d)
			}
			if want := whole.Count(d); sum != want {
				t.Errorf("%s: counts before %v add up to %d, want %d", arrival, d, sum, want)
			}
		}
	}
}

func TestRampToZeroStops(t *testing.T) {
	down := &experiments.RateProfile{Start: 100, Stages: []experiments.RateStage{{Duration: 2 * time.Second, Target: 0}}}
	// The integral reaches k = 0, 1, ..., 100: 101 arrivals, the last one
	// as the rate reaches zero.
	s := &EvenSchedule{Curve: down}
	if got := s.Count(time.Hour); got != 101 {
		t.Errorf("Count(1h) = %d, want 101", got)
	}
	if last, _ := s.Due(100); last < 2*time.Second-time.Microsecond || last > 2*time.Second {
		t.Errorf("arrival 100 at %v, want 2s", last)
	}
	if _, stop := Until(s, time.Hour).Pace(0, 101); !stop {
		t.Error("arrival 101 of a ramp down to zero was paced")
	}
}

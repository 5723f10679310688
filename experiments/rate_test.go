package experiments

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const staged = `
name: t
rate: {stages: [{duration: 10s, target: 2000}, {duration: 5s, target: 8000}, {duration: 10s, target: 2000}]}
instances: {count: 3, service: {dist: fixed, value: 10ms}}
strategies: [round-robin]
`

func TestRateStages(t *testing.T) {
	e, err := Parse("t.yaml", []byte(staged))
	if err != nil {
		t.Fatal(err)
	}
	want := &RateProfile{Start: 2000, Stages: []RateStage{
		{10 * time.Second, 2000}, {5 * time.Second, 8000}, {10 * time.Second, 2000},
	}}
	if diff := cmp.Diff(want, e.Profile); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	// 20000 + 25000 + 50000 requests in 25 s.
	if e.Duration != 25*time.Second || math.Abs(e.Rate-3800) > 1e-9 || e.PeakRate() != 8000 {
		t.Errorf("duration %v, mean rate %v, peak %v; want 25s, 3800, 8000", e.Duration, e.Rate, e.PeakRate())
	}
	tests := []struct {
		at   time.Duration
		rate float64
	}{
		{0, 2000}, {10 * time.Second, 2000}, {12500 * time.Millisecond, 5000},
		{15 * time.Second, 8000}, {20 * time.Second, 5000}, {time.Minute, 2000},
	}
	for _, tt := range tests {
		if got := e.Profile.At(tt.at); math.Abs(got-tt.rate) > 1e-9 {
			t.Errorf("At(%v) = %v, want %v", tt.at, got, tt.rate)
		}
	}
	// TimeOf inverts Arrivals.
	for _, x := range []float64{0, 1, 19999, 20000, 33333, 45000, 94999} {
		if got := e.Profile.Arrivals(e.Profile.TimeOf(x)); math.Abs(got-x) > 1e-3 {
			t.Errorf("Arrivals(TimeOf(%v)) = %v", x, got)
		}
	}

	// start: ramps up from it; a duration equal to the stages' total is fine.
	e, err = Parse("t.yaml", []byte(strings.Replace(staged, "rate: {stages", "duration: 25s\nrate: {start: 0, stages", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if e.Profile.Start != 0 || math.Abs(e.Rate-3400) > 1e-9 {
		t.Errorf("start %v, mean %v; want 0 and 3400 (10000 fewer requests over the first stage)", e.Profile.Start, e.Rate)
	}

	plain, err := Parse("t.yaml", []byte(good))
	if err != nil || plain.Profile != nil || plain.Rate != 100 || plain.PeakRate() != 100 {
		t.Errorf("a plain rate: profile %v, rate %v, error %v", plain.Profile, plain.Rate, err)
	}
}

func TestBadRateStages(t *testing.T) {
	const stages = "{stages: [{duration: 10s, target: 2000}, {duration: 5s, target: 8000}, {duration: 10s, target: 2000}]}"
	tests := []struct {
		name string
		rate string // replaces the staged file's rate
		add  string
		want string
	}{
		{"no stages", "{stages: []}", "", "t.yaml: rate.stages: needs at least one stage"},
		{"start alone", "{start: 100}", "", "t.yaml: rate.stages: needs at least one stage"},
		{"unknown field", "{stages: [{duration: 1s, target: 5}], peak: 3}", "", "t.yaml: rate.peak: line 3: unknown field (rate takes start and stages)"},
		{"unknown stage field", "{stages: [{duration: 1s, target: 5, hold: 2s}]}", "", "t.yaml: rate.stages[0].hold: line 3: unknown field (a stage takes duration and target)"},
		{"stage not a mapping", "{stages: [5]}", "", "t.yaml: rate.stages[0]: line 3: want {duration: 10s, target: 2000}"},
		{"missing duration", "{stages: [{duration: 1s, target: 5}, {target: 5}]}", "", "t.yaml: rate.stages[1].duration: is required"},
		{"bad duration", "{stages: [{duration: 1s, target: 5}, {duration: soon, target: 5}]}", "", `t.yaml: rate.stages[1].duration: want a duration like "10s", got "soon"`},
		{"zero duration", "{stages: [{duration: 1s, target: 5}, {duration: 0s, target: 5}]}", "", "t.yaml: line 3: rate.stages[1].duration: must be > 0, got 0s"},
		{"missing target", "{stages: [{duration: 1s}]}", "", "t.yaml: rate.stages[0].target: is required"},
		{"negative target", "{stages: [{duration: 1s, target: 5}, {duration: 1s, target: -5}]}", "", "t.yaml: line 3: rate.stages[1].target: must be within [0, 1000000] requests per second, got -5"},
		{"target too high", "{stages: [{duration: 1s, target: 2e6}]}", "", "t.yaml: rate.stages[0].target: must be within [0, 1000000]"},
		{"negative start", "{start: -1, stages: [{duration: 1s, target: 5}]}", "", "t.yaml: rate.start: must be within [0, 1000000]"},
		{"all zero", "{stages: [{duration: 1s, target: 0}]}", "", "t.yaml: rate.stages: send fewer than one request in the run's 1s"},
		{"duration disagrees", stages, "duration: 30s\n", "t.yaml: line 6: duration: 30s differs from the total of rate.stages (25s); leave duration out to run the stages, or make them agree"},
		{"not a number", "fast", "", `t.yaml: rate: want requests per second or {stages: [{duration: 10s, target: 2000}, ...]}, got "fast"`},
		{"a list", "[1, 2]", "", "t.yaml: rate: line 3: want requests per second or {stages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Replace(staged, "rate: "+stages, "rate: "+tt.rate, 1) + tt.add
			if !strings.Contains(staged, "rate: "+stages) {
				t.Fatal("test bug: the staged file changed")
			}
			_, err := Parse("t.yaml", []byte(body))
			if err == nil {
				t.Fatalf("accepted:\n%s", body)
			}
			if !strings.Contains(msg(err, tt.want), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRateStagesOverrides(t *testing.T) {
	e, err := Parse("t.yaml", []byte(staged))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		o        Overrides
		duration time.Duration
		mean     float64
		peak     float64
	}{
		// 20000 + 25000 requests in 15 s: the last stage is cut off.
		{"shorter run cuts the stages", Overrides{Duration: 15 * time.Second}, 15 * time.Second, 3000, 8000},
		// 95000 + 2000*5 in 30 s: the last target holds.
		{"longer run holds the last target", Overrides{Duration: 30 * time.Second}, 30 * time.Second, 3500, 8000},
		{"rate scales every stage", Overrides{Rate: 1900}, 25 * time.Second, 1900, 4000},
		{"the mean rate itself changes nothing", Overrides{Rate: e.Rate}, 25 * time.Second, 3800, 8000},
		// The shorter run's mean is 3000; --rate 1500 halves it.
		{"duration then rate", Overrides{Duration: 15 * time.Second, Rate: 1500}, 15 * time.Second, 1500, 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Apply(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Duration != tt.duration || math.Abs(got.Rate-tt.mean) > 1e-9 || math.Abs(got.PeakRate()-tt.peak) > 1e-9 {
				t.Errorf("duration %v mean %v peak %v; want %v, %v, %v", got.Duration, got.Rate, got.PeakRate(), tt.duration, tt.mean, tt.peak)
			}
		})
	}
	// A generator gets the coordinator's mean back as --rate: its profile
	// must be the very same, bit for bit.
	same, err := e.Apply(Overrides{Duration: e.Duration, Rate: e.Rate})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.Profile, same.Profile); diff != "" || same.Rate != e.Rate {
		t.Errorf("profile changed by its own mean rate (-file +after):\n%s", diff)
	}
	coord, err := e.Apply(Overrides{Duration: 15 * time.Second, Rate: 1234.5})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := e.Apply(Overrides{Duration: coord.Duration, Rate: coord.Rate})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(coord.Profile, gen.Profile); diff != "" {
		t.Errorf("a generator given the coordinator's overrides got another profile (-coordinator +generator):\n%s", diff)
	}
	if e.Profile.Stages[1].Target != 8000 {
		t.Error("Apply changed the original's profile")
	}
	if _, err := e.Apply(Overrides{Rate: 1e6}); err == nil || !strings.Contains(err.Error(), "rate.stages[1].target: must be within [0, 1000000]") {
		t.Errorf("a mean rate that puts the peak beyond the limit: error %v", err)
	}
}

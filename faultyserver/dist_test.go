package faultyserver

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestDistValidate(t *testing.T) {
	tests := []struct {
		name string
		dist Dist
		want string // substring of the error; "" = valid
	}{
		{"fixed", Fixed(10 * time.Millisecond), ""},
		{"fixed zero", Fixed(0), ""},
		{"uniform", Dist{Kind: DistUniform, Min: Duration(time.Millisecond), Max: Duration(time.Second)}, ""},
		{"uniform degenerate", Dist{Kind: DistUniform, Min: Duration(time.Millisecond), Max: Duration(time.Millisecond)}, ""},
		{"exponential", Dist{Kind: DistExponential, Mean: Duration(time.Millisecond)}, ""},
		{"normal", Dist{Kind: DistNormal, Mean: Duration(167 * time.Millisecond), SD: Duration(5 * time.Millisecond)}, ""},
		{"lognormal", Dist{Kind: DistLognormal, Median: Duration(time.Millisecond), Sigma: 0.5}, ""},
		{"missing kind", Dist{Value: Duration(time.Millisecond)}, "dist: required"},
		{"unknown kind", Dist{Kind: "pareto"}, `dist: unknown distribution "pareto"`},
		{"negative fixed", Fixed(-time.Millisecond), "value: must be >= 0"},
		{"uniform max below min", Dist{Kind: DistUniform, Min: Duration(time.Second), Max: Duration(time.Millisecond)}, "max: must be >= min"},
		{"uniform negative min", Dist{Kind: DistUniform, Min: Duration(-time.Second)}, "min: must be >= 0"},
		{"exponential zero mean", Dist{Kind: DistExponential}, "mean: must be > 0"},
		{"normal negative sd", Dist{Kind: DistNormal, Mean: Duration(time.Second), SD: Duration(-1)}, "sd: must be >= 0"},
		{"normal negative mean", Dist{Kind: DistNormal, Mean: Duration(-time.Second)}, "mean: must be >= 0"},
		{"lognormal zero median", Dist{Kind: DistLognormal, Sigma: 1}, "median: must be > 0"},
		{"lognormal negative sigma", Dist{Kind: DistLognormal, Median: Duration(time.Second), Sigma: -1}, "sigma: must be"},
		{"parameter of another kind", Dist{Kind: DistFixed, Value: Duration(time.Second), Mean: Duration(time.Second)}, `mean: not a parameter of dist "fixed"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.dist.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: unexpected error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate: error %v, want one containing %q", err, tt.want)
			}
			if _, serr := NewSampler(tt.dist, rand.New(rand.NewPCG(1, 1))); (serr == nil) != (err == nil) {
				t.Errorf("NewSampler error %v disagrees with Validate error %v", serr, err)
			}
		})
	}
}

func TestDistString(t *testing.T) {
	tests := []struct {
		dist Dist
		want string
	}{
		{Fixed(10 * time.Millisecond), "fixed 10ms"},
		{Dist{Kind: DistUniform, Min: Duration(time.Millisecond), Max: Duration(3 * time.Millisecond)}, "uniform(min 1ms, max 3ms)"},
		{Dist{Kind: DistExponential, Mean: Duration(20 * time.Millisecond)}, "exponential(mean 20ms)"},
		{Dist{Kind: DistNormal, Mean: Duration(167 * time.Millisecond), SD: Duration(5 * time.Millisecond)}, "normal(mean 167ms, sd 5ms)"},
		{Dist{Kind: DistLognormal, Median: Duration(10 * time.Millisecond), Sigma: 0.5}, "lognormal(median 10ms, sigma 0.5)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.dist.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDistEncoding(t *testing.T) {
	d := Dist{Kind: DistNormal, Mean: Duration(167 * time.Millisecond), SD: Duration(5 * time.Millisecond)}
	const wantJSON = `{"dist":"normal","mean":"167ms","sd":"5ms"}`
	b, err := json.Marshal(d)
	if err != nil || string(b) != wantJSON {
		t.Fatalf("json.Marshal = %s, %v; want %s", b, err, wantJSON)
	}
	var fromJSON Dist
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	var fromYAML Dist
	if err := yaml.Unmarshal([]byte("dist: normal\nmean: 167ms\nsd: 5ms\n"), &fromYAML); err != nil {
		t.Fatalf("yaml.Unmarshal: %v", err)
	}
	for name, got := range map[string]Dist{"JSON": fromJSON, "YAML": fromYAML} {
		if diff := cmp.Diff(d, got); diff != "" {
			t.Errorf("%s decode mismatch (-want +got):\n%s", name, diff)
		}
	}
	y, err := yaml.Marshal(d)
	if err != nil || string(y) != "dist: normal\nmean: 167ms\nsd: 5ms\n" {
		t.Errorf("yaml.Marshal = %q, %v", y, err)
	}
}

func TestSamplerFixedIsExact(t *testing.T) {
	s, err := NewSampler(Fixed(10*time.Millisecond), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if got := s.Sample(); got != 10*time.Millisecond {
			t.Fatalf("Sample() = %v, want exactly 10ms", got)
		}
	}
}

func TestSamplerMoments(t *testing.T) {
	const n = 20000
	tests := []struct {
		name     string
		dist     Dist
		mean     time.Duration // expected mean
		min, max time.Duration // every sample within
	}{
		{"uniform", Dist{Kind: DistUniform, Min: Duration(10 * time.Millisecond), Max: Duration(30 * time.Millisecond)},
			20 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond},
		{"exponential", Dist{Kind: DistExponential, Mean: Duration(20 * time.Millisecond)},
			20 * time.Millisecond, 0, math.MaxInt64},
		{"normal", Dist{Kind: DistNormal, Mean: Duration(167 * time.Millisecond), SD: Duration(5 * time.Millisecond)},
			167 * time.Millisecond, 0, math.MaxInt64},
		{"lognormal", Dist{Kind: DistLognormal, Median: Duration(10 * time.Millisecond), Sigma: 0.5},
			time.Duration(float64(10*time.Millisecond) * math.Exp(0.125)), 0, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSampler(tt.dist, rand.New(rand.NewPCG(7, 7)))
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for range n {
				v := s.Sample()
				if v < tt.min || v > tt.max {
					t.Fatalf("Sample() = %v, outside [%v, %v]", v, tt.min, tt.max)
				}
				sum += float64(v)
			}
			mean := sum / n
			if rel := math.Abs(mean-float64(tt.mean)) / float64(tt.mean); rel > 0.03 {
				t.Errorf("mean of %d samples %v, want %v within 3%%", n, time.Duration(mean), tt.mean)
			}
		})
	}
}

func TestSamplerNormalTruncatedAtZero(t *testing.T) {
	d := Dist{Kind: DistNormal, Mean: Duration(time.Millisecond), SD: Duration(5 * time.Millisecond)}
	s, err := NewSampler(d, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for range 10000 {
		if v := s.Sample(); v < 0 {
			t.Fatalf("Sample() = %v, want >= 0", v)
		}
	}
}

func TestSamplerIsSeeded(t *testing.T) {
	d := Dist{Kind: DistExponential, Mean: Duration(time.Millisecond)}
	draw := func(seed uint64) []time.Duration {
		s, err := NewSampler(d, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]time.Duration, 50)
		for i := range out {
			out[i] = s.Sample()
		}
		return out
	}
	if diff := cmp.Diff(draw(5), draw(5)); diff != "" {
		t.Errorf("same seed, different samples:\n%s", diff)
	}
	if cmp.Equal(draw(5), draw(6)) {
		t.Errorf("different seeds gave identical samples")
	}
}

func TestDurationEncoding(t *testing.T) {
	type wrap struct {
		Latency Duration `json:"latency" yaml:"latency"`
	}
	tests := []struct {
		name    string
		json    string
		yaml    string
		want    time.Duration
		wantErr string
	}{
		{name: "milliseconds", json: `{"latency":"10ms"}`, yaml: "latency: 10ms", want: 10 * time.Millisecond},
		{name: "compound", json: `{"latency":"1m30s"}`, yaml: "latency: 1m30s", want: 90 * time.Second},
		{name: "quoted yaml", json: `{"latency":"250us"}`, yaml: `latency: "250us"`, want: 250 * time.Microsecond},
		{name: "number", json: `{"latency":5}`, yaml: "latency: 5", wantErr: `want a duration like "10ms", got 5`},
		{name: "no unit", json: `{"latency":"5"}`, yaml: `latency: "5"`, wantErr: `want a duration like "10ms", got "5"`},
		{name: "collection", json: `{"latency":{}}`, yaml: "latency: {}", wantErr: `want a duration like "10ms"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j, y wrap
			jerr := json.Unmarshal([]byte(tt.json), &j)
			yerr := yaml.Unmarshal([]byte(tt.yaml), &y)
			for name, c := range map[string]struct {
				err error
				got Duration
			}{"JSON": {jerr, j.Latency}, "YAML": {yerr, y.Latency}} {
				if tt.wantErr != "" {
					if c.err == nil || !strings.Contains(c.err.Error(), tt.wantErr) {
						t.Errorf("%s: error %v, want one containing %q", name, c.err, tt.wantErr)
					}
					continue
				}
				if c.err != nil || time.Duration(c.got) != tt.want {
					t.Errorf("%s: got %v, %v; want %v", name, c.got, c.err, tt.want)
				}
			}
		})
	}
	b, err := json.Marshal(wrap{Duration(1500 * time.Millisecond)})
	if err != nil || string(b) != `{"latency":"1.5s"}` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
}

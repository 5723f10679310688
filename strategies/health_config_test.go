package strategies

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHealthParams(t *testing.T) {
	tests := []struct {
		spec string
		want string // error; empty: valid
	}{
		{"p2c+health", ""},
		{"p2c+health(window=30s,weights=1:0.5:0.5:0,recover=5s,ramp=1m,max_middle=2m,max_ejected=0,min_requests=1)", ""},
		{"p2c+health(degraded_errors=0.1,critical_errors=0.1,unhealthy_errors=1)", ""},
		{"p2c+health(degraded_latency=1,critical_latency=1,unhealthy_latency=1000)", ""},
		{"p2c+health(window=0s)", `health: window: want a duration > 0, got "0s"`},
		{"p2c+health(degraded_errors=0)", `health: degraded_errors: want a number in (0, 1], got "0"`},
		{"p2c+health(critical_errors=0.01)", `health: critical_errors: want a number >= degraded_errors (0.05), got "0.01"`},
		{"p2c+health(unhealthy_errors=0.1)", `health: unhealthy_errors: want a number >= critical_errors (0.2), got "0.1"`},
		{"p2c+health(degraded_latency=0.5)", `health: degraded_latency: want a number in [1, 1000], got "0.5"`},
		{"p2c+health(critical_latency=1.5)", `health: critical_latency: want a number >= degraded_latency (2), got "1.5"`},
		{"p2c+health(unhealthy_latency=3)", `health: unhealthy_latency: want a number >= critical_latency (4), got "3"`},
		{"p2c+health(weights=1:0.5:0.1)", `health: weights: want four numbers in [0, 1] separated by ":", non-increasing and the first 1, like "1:0.5:0.1:0", got "1:0.5:0.1"`},
		{"p2c+health(weights=1:0.5:0.6:0)", `health: weights: want four numbers in [0, 1] separated by ":", non-increasing and the first 1, like "1:0.5:0.1:0", got "1:0.5:0.6:0"`},
		{"p2c+health(weights=0.9:0.5:0.1:0)", `health: weights: want four numbers in [0, 1] separated by ":", non-increasing and the first 1, like "1:0.5:0.1:0", got "0.9:0.5:0.1:0"`},
		{"p2c+health(weights=1:x:0.1:0)", `health: weights: want four numbers in [0, 1] separated by ":", non-increasing and the first 1, like "1:0.5:0.1:0", got "1:x:0.1:0"`},
		{"p2c+health(weights=1:0.5:0.1:-1)", `health: weights: want four numbers in [0, 1] separated by ":", non-increasing and the first 1, like "1:0.5:0.1:0", got "1:0.5:0.1:-1"`},
		{"p2c+health(recover=-1s)", `health: recover: want a duration > 0, got "-1s"`},
		{"p2c+health(ramp=soon)", `health: ramp: want a duration like "5s", got "soon"`},
		{"p2c+health(max_middle=0s)", `health: max_middle: want a duration > 0, got "0s"`},
		{"p2c+health(max_ejected=1.5)", `health: max_ejected: want a number in [0, 1], got "1.5"`},
		{"p2c+health(min_requests=0)", `health: min_requests: want an integer >= 1, got "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			checkParse(t, tt.spec, tt.want)
		})
	}
	cfg, err := parseHealthConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := healthConfig{
		window:      10 * time.Second,
		errors:      [4]float64{0, 0.05, 0.2, 0.5},
		latency:     [4]float64{0, 2, 4, 8},
		weights:     [4]float64{1, 0.5, 0.1, 0},
		recover:     10 * time.Second,
		ramp:        10 * time.Second,
		maxMiddle:   60 * time.Second,
		maxEjected:  0.3,
		minRequests: 20,
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(healthConfig{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestHealthConfigDefaults(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
	}{
		{"none given", nil},
		{"every default written out", map[string]string{
			"window": "10s", "degraded_errors": "0.05", "critical_errors": "0.2", "unhealthy_errors": "0.5",
			"degraded_latency": "2", "critical_latency": "4", "unhealthy_latency": "8",
			"weights": DefaultHealthWeights, "recover": "10s", "ramp": "10s", "max_middle": "1m",
			"max_ejected": "0.3", "min_requests": "20",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHealthConfig(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(defaultHealthConfig(), got, cmp.AllowUnexported(healthConfig{})); diff != "" {
				t.Errorf("config (-defaults +got):\n%s", diff)
			}
		})
	}
	for _, key := range healthParams {
		if _, ok := tests[1].params[key]; !ok {
			t.Errorf("parameter %q is missing from the defaults written out", key)
		}
	}
}

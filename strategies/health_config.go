package strategies

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Defaults of the health wrapper.
const (
	DefaultHealthWindow           = 10 * time.Second
	DefaultHealthDegradedErrors   = 0.05
	DefaultHealthCriticalErrors   = 0.2
	DefaultHealthUnhealthyErrors  = 0.5
	DefaultHealthDegradedLatency  = 2.0
	DefaultHealthCriticalLatency  = 4.0
	DefaultHealthUnhealthyLatency = 8.0
	DefaultHealthWeights          = "1:0.5:0.1:0"
	DefaultHealthRecover          = 10 * time.Second
	DefaultHealthRamp             = 10 * time.Second
	DefaultHealthMaxMiddle        = 60 * time.Second
	DefaultHealthMaxEjected       = 0.3
	DefaultHealthMinRequests      = 20
)

// healthConfig holds the health wrapper's parameters, indexed by level where
// they are per level (index 0, healthy, is unused for thresholds).
type healthConfig struct {
	window      time.Duration
	errors      [4]float64 // error ratio from which a host is at least at the level
	latency     [4]float64 // mean latency / fleet median from which it is
	weights     [4]float64 // traffic factor of each level
	recover     time.Duration
	ramp        time.Duration
	maxMiddle   time.Duration
	maxEjected  float64
	minRequests int
}

// defaultHealthConfig is the configuration of a bare "health".
func defaultHealthConfig() healthConfig {
	return healthConfig{
		window:      DefaultHealthWindow,
		errors:      [4]float64{0, DefaultHealthDegradedErrors, DefaultHealthCriticalErrors, DefaultHealthUnhealthyErrors},
		latency:     [4]float64{0, DefaultHealthDegradedLatency, DefaultHealthCriticalLatency, DefaultHealthUnhealthyLatency},
		weights:     [4]float64{1, 0.5, 0.1, 0}, // DefaultHealthWeights
		recover:     DefaultHealthRecover,
		ramp:        DefaultHealthRamp,
		maxMiddle:   DefaultHealthMaxMiddle,
		maxEjected:  DefaultHealthMaxEjected,
		minRequests: DefaultHealthMinRequests,
	}
}

// healthParams are the parameters of the health wrapper; the health doc
// says what each does.
var healthParams = []string{
	"window", "degraded_errors", "critical_errors", "unhealthy_errors",
	"degraded_latency", "critical_latency", "unhealthy_latency",
	"weights", "recover", "ramp", "max_middle", "max_ejected", "min_requests",
}

// parseHealthConfig reads the parameters of a health wrapper over the
// defaults; an error names the parameter and what it wants.
func parseHealthConfig(params map[string]string) (healthConfig, error) {
	cfg := defaultHealthConfig()
	var err error
	if cfg.window, err = durationParam(params, "window", cfg.window); err != nil {
		return cfg, err
	}
	// Thresholds, per level, non-decreasing.
	for l := levelDegraded; l <= levelUnhealthy; l++ {
		key := l.String() + "_errors"
		if cfg.errors[l], err = fractionParam(params, key, cfg.errors[l]); err != nil {
			return cfg, err
		}
		if prev := cfg.errors[l-1]; cfg.errors[l] < prev {
			return cfg, fmt.Errorf("%s: want a number >= %s_errors (%g), got %q", key, (l - 1).String(), prev, params[key])
		}
		key = l.String() + "_latency"
		if cfg.latency[l], err = floatParam(params, key, cfg.latency[l], 1, 1000); err != nil {
			return cfg, err
		}
		if prev := cfg.latency[l-1]; cfg.latency[l] < prev {
			return cfg, fmt.Errorf("%s: want a number >= %s_latency (%g), got %q", key, (l - 1).String(), prev, params[key])
		}
	}
	if cfg.weights, err = healthWeightsParam(params, "weights", cfg.weights); err != nil {
		return cfg, err
	}
	if cfg.recover, err = durationParam(params, "recover", cfg.recover); err != nil {
		return cfg, err
	}
	if cfg.ramp, err = durationParam(params, "ramp", cfg.ramp); err != nil {
		return cfg, err
	}
	if cfg.maxMiddle, err = durationParam(params, "max_middle", cfg.maxMiddle); err != nil {
		return cfg, err
	}
	if cfg.maxEjected, err = floatParam(params, "max_ejected", cfg.maxEjected, 0, 1); err != nil {
		return cfg, err
	}
	if cfg.minRequests, err = intParam(params, "min_requests", cfg.minRequests, 1); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// healthWeightsParam reads the four level weights "h:d:c:u", or returns def
// when key is absent.
func healthWeightsParam(params map[string]string, key string, def [4]float64) ([4]float64, error) {
	v, ok := params[key]
	if !ok {
		return def, nil
	}
	var w [4]float64
	bad := fmt.Errorf("%s: want four numbers in [0, 1] separated by \":\", non-increasing and the first 1, like %q, got %q", key, DefaultHealthWeights, v)
	parts := strings.Split(v, ":")
	if len(parts) != len(w) {
		return w, bad
	}
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 || (i > 0 && f > w[i-1]) {
			return w, bad
		}
		w[i] = f
	}
	if w[0] != 1 {
		return w, bad
	}
	return w, nil
}

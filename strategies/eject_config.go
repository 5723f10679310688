package strategies

import (
	"fmt"
	"time"
)

// Defaults of the eject wrapper, those of Envoy's outlier detection.
const (
	DefaultEjectConsecutive = 5                 // consecutive_5xx
	DefaultEjectDuration    = 30 * time.Second  // base_ejection_time
	DefaultEjectMaxDuration = 300 * time.Second // max_ejection_time
	DefaultEjectMax         = 0.1               // max_ejection_percent, 10%
	DefaultEjectInterval    = 10 * time.Second  // interval
)

// Defaults of the statistical detectors, those of Envoy.
const (
	defaultEjectConsecutiveLocal = 5    // consecutive_local_origin_failure
	defaultEjectSRMinHosts       = 5    // success_rate_minimum_hosts
	defaultEjectSRVolume         = 100  // success_rate_request_volume
	defaultEjectSRFactor         = 1.9  // success_rate_stdev_factor 1900 / 1000
	defaultEjectFPThreshold      = 0.85 // failure_percentage_threshold 85%
	defaultEjectFPMinHosts       = 5    // failure_percentage_minimum_hosts
	defaultEjectFPVolume         = 50   // failure_percentage_request_volume
)

// ejectConfig is the validated configuration of an eject wrapper.
type ejectConfig struct {
	consecutive      int           // failures in a row that eject (consecutive_5xx); 0: off
	splitLocal       bool          // count local-origin failures apart
	consecutiveLocal int           // local-origin failures in a row that eject, with splitLocal; 0: off
	interval         time.Duration // between runs of the statistical detectors
	duration         time.Duration // base ejection time
	maxDuration      time.Duration // longest ejection, >= duration
	maxShare         float64       // most endpoints ejected at once, as a share of N
	panicShare       float64       // 0, or the non-ejected share below which ejections are ignored
	successRate      bool          // enforce success-rate ejection
	srMinHosts       int
	srVolume         int
	srFactor         float64
	failurePct       bool // enforce failure-percentage ejection
	fpThreshold      float64
	fpMinHosts       int
	fpVolume         int
}

// defaultEjectConfig is the configuration of a bare "eject".
func defaultEjectConfig() ejectConfig {
	return ejectConfig{
		consecutive:      DefaultEjectConsecutive,
		consecutiveLocal: defaultEjectConsecutiveLocal,
		interval:         DefaultEjectInterval,
		duration:         DefaultEjectDuration,
		maxDuration:      DefaultEjectMaxDuration,
		maxShare:         DefaultEjectMax,
		successRate:      true,
		srMinHosts:       defaultEjectSRMinHosts,
		srVolume:         defaultEjectSRVolume,
		srFactor:         defaultEjectSRFactor,
		fpThreshold:      defaultEjectFPThreshold,
		fpMinHosts:       defaultEjectFPMinHosts,
		fpVolume:         defaultEjectFPVolume,
	}
}

// ejectParams are the parameters of the eject wrapper; the ejector's doc
// says what each does.
var ejectParams = []string{
	"consecutive", "duration", "max",
	"split_local", "consecutive_local", "interval", "max_duration", "panic",
	"success_rate", "sr_min_hosts", "sr_volume", "sr_factor",
	"failure_percentage", "fp_threshold", "fp_min_hosts", "fp_volume",
}

// parseEjectConfig reads the parameters of an eject wrapper over the
// defaults; an error names the parameter and what it wants.
func parseEjectConfig(params map[string]string) (ejectConfig, error) {
	c := defaultEjectConfig()
	var err error
	ints := []struct {
		dst        *int
		key        string
		def, least int
	}{
		{&c.consecutive, "consecutive", c.consecutive, 0},
		{&c.consecutiveLocal, "consecutive_local", c.consecutiveLocal, 0},
		{&c.srMinHosts, "sr_min_hosts", c.srMinHosts, 1},
		{&c.srVolume, "sr_volume", c.srVolume, 1},
		{&c.fpMinHosts, "fp_min_hosts", c.fpMinHosts, 1},
		{&c.fpVolume, "fp_volume", c.fpVolume, 1},
	}
	for _, p := range ints {
		if *p.dst, err = intParam(params, p.key, p.def, p.least); err != nil {
			return ejectConfig{}, err
		}
	}
	bools := []struct {
		dst *bool
		key string
	}{
		{&c.splitLocal, "split_local"},
		{&c.successRate, "success_rate"},
		{&c.failurePct, "failure_percentage"},
	}
	for _, p := range bools {
		if *p.dst, err = boolParam(params, p.key, *p.dst); err != nil {
			return ejectConfig{}, err
		}
	}
	if c.interval, err = durationParam(params, "interval", c.interval); err != nil {
		return ejectConfig{}, err
	}
	if c.duration, err = durationParam(params, "duration", c.duration); err != nil {
		return ejectConfig{}, err
	}
	// As in Envoy, max_ejection_time defaults to the larger of 300s and
	// base_ejection_time, and may not be set below the latter.
	if c.maxDuration, err = durationParam(params, "max_duration", max(c.maxDuration, c.duration)); err != nil {
		return ejectConfig{}, err
	}
	if c.maxDuration < c.duration {
		return ejectConfig{}, fmt.Errorf("max_duration: want a duration >= duration (%v), got %q", c.duration, params["max_duration"])
	}
	if c.maxShare, err = fractionParam(params, "max", c.maxShare); err != nil {
		return ejectConfig{}, err
	}
	floats := []struct {
		dst         *float64
		key         string
		least, most float64
	}{
		{&c.panicShare, "panic", 0, 1},
		{&c.srFactor, "sr_factor", 0, 100},
		{&c.fpThreshold, "fp_threshold", 0, 1},
	}
	for _, p := range floats {
		if *p.dst, err = floatParam(params, p.key, *p.dst, p.least, p.most); err != nil {
			return ejectConfig{}, err
		}
	}
	return c, nil
}

package reports

import (
	"math"
	"time"
)

// Calibration names what a calibrated simulation took its transport
// overhead from, and keeps the calibrating real run's figures.
type Calibration struct {
	// From is the run's directory or the file, as it was given.
	From string `json:"from"`
	// Started is when the calibrating run started; absent when the
	// calibration was a calibration document, not a run.
	Started *time.Time `json:"started,omitempty"`
	// Engine and Backends are the calibrating run's, e.g. "real" and
	// "process"; absent for a calibration document.
	Engine   string `json:"engine,omitempty"`
	Backends string `json:"backends,omitempty"`
	// PreShare is the share of each request's overhead the simulation
	// spent before its instance started on it, the rest after its answer.
	PreShare float64 `json:"pre_share"`
	// Real holds the calibrating run's figures, one per strategy, in its
	// order; absent for a calibration document.
	Real []RealFigures `json:"real,omitempty"`
}

// RealFigures are one strategy's figures in the run a simulation was
// calibrated from. A figure the run did not measure is absent.
type RealFigures struct {
	Name string `json:"name"` // the strategy's name
	// Key is the strategy's value of the calibrating run's key metric
	// (KeyMetric, named there).
	Key         *float64 `json:"key,omitempty"`
	KeyMetric   string   `json:"key_metric"`   // the calibrating run's key metric, whose value Key is
	FaultyShare float64  `json:"faulty_share"` // the strategy's faulty_share in that run
	ErrorRatio  float64  `json:"error_ratio"`  // its error_ratio
	P99Ms       float64  `json:"p99_ms"`       // its latency_ms.p99
}

// NewCalibration records real, the summary of the run a simulation was
// calibrated from (given as from), for the simulation's summary.
func NewCalibration(from string, preShare float64, real *Summary) *Calibration {
	c := &Calibration{From: from, PreShare: preShare}
	if real == nil {
		return c
	}
	started := real.Started
	c.Started, c.Engine, c.Backends = &started, real.Engine, real.Backends
	key := real.KeyMetric
	if _, ok := MetricValue(&Strategy{}, key); !ok {
		key = DefaultKeyMetric
	}
	for i := range real.Strategies {
		st := &real.Strategies[i]
		f := RealFigures{Name: st.Name, KeyMetric: key, FaultyShare: st.FaultyShare, ErrorRatio: st.ErrorRatio, P99Ms: st.LatencyMs.P99}
		if v, _ := MetricValue(st, key); !math.IsNaN(v) && !math.IsInf(v, 0) {
			f.Key = &v
		}
		c.Real = append(c.Real, f)
	}
	return c
}

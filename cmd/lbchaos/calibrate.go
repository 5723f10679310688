package main

import (
	"flag"
	"fmt"

	"github.com/lbchaos/lbchaos/harness/sim"
	"github.com/lbchaos/lbchaos/reports"
)

// calibrateFlags are lbchaos run's flags of a calibrated simulation.
type calibrateFlags struct {
	path string
	pre  float64
	cal  *sim.Calibration // loaded by load
}

func (f *calibrateFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.path, "calibrate", "", "with --engine sim: add to every simulated request the transport overhead a real run measured, drawn from its distribution (summary.json transport_overhead_ms, per strategy): RUN_DIR a real run's directory, or FILE its summary.json or a calibration document (schema "+sim.CalibrationSchema+"); the report sets the real run's figures beside the simulation's")
	fs.Float64Var(&f.pre, "calibrate-pre", sim.DefaultPreShare, "with --calibrate: the share of each request's overhead spent between the pick and the instance starting on it, from 0 to 1; the rest passes between its answer and the outcome reaching the strategy (default: the calibration document's pre_share, else 0.5)")
}

// load reads the calibration; nil without --calibrate.
func (f *calibrateFlags) load(fs *flag.FlagSet) (*sim.Calibration, error) {
	preSet := false
	fs.Visit(func(fl *flag.Flag) { preSet = preSet || fl.Name == "calibrate-pre" })
	if f.path == "" {
		if preSet {
			return nil, fmt.Errorf("--calibrate-pre: needs --calibrate")
		}
		return nil, nil
	}
	c, err := sim.LoadCalibration(f.path)
	if err != nil {
		return nil, fmt.Errorf("--calibrate: %w", err)
	}
	if preSet {
		c.PreShare = f.pre
	}
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("--calibrate-pre: %w", err)
	}
	f.cal = c
	return c, nil
}

// record notes the calibration in a simulated run's summary.
func (f *calibrateFlags) record(sum *reports.Summary) {
	if f.cal == nil {
		return
	}
	sum.CalibratedFrom = reports.NewCalibration(f.cal.From, f.cal.PreShare, f.cal.Real)
}

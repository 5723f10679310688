package experiments

import (
	"fmt"
	"os"
	"slices"
	"time"
)

// Overrides are command-line changes to a loaded experiment. Zero values
// leave the field as the file has it.
type Overrides struct {
	Duration   time.Duration
	Rate       float64
	Seed       *uint64
	Strategies []string
	// External points the run at instances that already run, one per
	// instance (cmd: --backend and --sidecar); it replaces the file's, and
	// its length the instance count (see resize).
	External []External
	// HealthPath replaces instances.health (cmd: --health-path).
	HealthPath string
	// Generators replaces generators (cmd: --generators); 0 keeps the
	// file's.
	Generators int
	// Instances replaces instances.count (see resize), as External does
	// by its length; 0 keeps the file's. A distributed run's generators
	// take it from their targets.
	Instances int
}

// Apply returns a copy of e with the overrides applied and validated; the
// error names the flag. Expectations are kept as they are, also those on a
// strategy the overrides leave out.
func (e *Experiment) Apply(o Overrides) (*Experiment, error) {
	c := *e
	c.Faults = slices.Clone(e.Faults)
	c.Warnings = slices.Clone(e.Warnings)
	c.Expect = slices.Clone(e.Expect)
	if o.Duration != 0 {
		if o.Duration < 0 {
			return nil, fmt.Errorf("--duration: must be > 0, got %v", o.Duration)
		}
		c.Duration = o.Duration
		// Faults scheduled beyond a shortened run are dropped; the ones
		// that still start are kept (their end is clipped by the run).
		c.dropFaults(fmt.Sprintf("--duration %v", o.Duration), func(f Fault) bool { return f.At < c.Duration }, func(f Fault) string {
			return fmt.Sprintf("the run ends before it starts at %v; give --duration over %v to keep it", f.At, f.At)
		})
		// A shorter run cuts the stages off; a longer one holds the last
		// target to its end.
		if c.Profile != nil {
			c.Rate = c.Profile.Mean(c.Duration)
			var at time.Duration
			for i, st := range c.Profile.Stages {
				if at >= c.Duration {
					c.Warnings = append(c.Warnings, fmt.Sprintf("--duration %v: rate stage %d (from %v, to %v req/s) and later ones do not run", o.Duration, i+1, at, st.Target))
					break
				}
				at += st.Duration
			}
		}
	}
	if o.Rate != 0 {
		if o.Rate < 0 {
			return nil, fmt.Errorf("--rate: must be > 0, got %v", o.Rate)
		}
		if c.Profile != nil && o.Rate != c.Rate {
			// --rate is the mean rate: every stage scales in proportion.
			// A generator, given this mean back, scales the file's
			// profile by the very same factor.
			c.Profile = c.Profile.Scaled(o.Rate / c.Rate)
			c.Warnings = append(c.Warnings, fmt.Sprintf("--rate %v: the rate stages' mean is %v req/s, so every stage's target is scaled by %.3g (stage 1: %v → %v req/s)",
				o.Rate, c.Rate, o.Rate/c.Rate, e.Profile.Stages[0].Target, c.Profile.Stages[0].Target))
		}
		c.Rate = o.Rate
	}
	if o.Generators != 0 {
		if o.Generators < 1 || o.Generators > MaxGenerators {
			return nil, fmt.Errorf("--generators: must be within [1, %d], got %d", MaxGenerators, o.Generators)
		}
		c.Generators = o.Generators
	}
	if o.Seed != nil {
		c.Seed = *o.Seed
	}
	if len(o.Strategies) > 0 {
		c.Strategies = o.Strategies
		// A strategy the file lists keeps its file; another one's path is
		// the command line's, relative to the current directory.
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("--strategies: %w", err)
		}
		if c.ProxyFiles, err = resolveProxyFiles(c.Strategies, cwd, e.ProxyFiles, func(int) string { return "--strategies" }); err != nil {
			return nil, err
		}
	}
	// One instance per --backend, whatever the file's count.
	n := o.Instances
	if len(o.External) > 0 {
		n = len(o.External)
	}
	if n != 0 && n != c.Instances.Count {
		if n < 1 || n > 1000 {
			return nil, fmt.Errorf("instance count %d (one per --backend or --target): a run has 1 to 1000 instances", n)
		}
		c.resize(n)
	}
	if len(o.External) > 0 {
		c.Instances.External = o.External
		if c.Instances.HealthPath == "" {
			c.Instances.HealthPath = DefaultHealthPath
		}
	}
	if o.HealthPath != "" {
		if len(c.Instances.External) == 0 {
			return nil, fmt.Errorf("--health-path: applies to external instances (--backend or instances.external) only")
		}
		c.Instances.HealthPath = o.HealthPath
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("after command-line overrides: %w", err)
	}
	return &c, nil
}

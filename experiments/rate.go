package experiments

import (
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxRate bounds the request rate, at any moment of a run.
const MaxRate = 1e6

// MaxRateStages bounds rate.stages.
const MaxRateStages = 1000

// RateProfile is a request rate that changes over a run, in the manner of
// k6's stages: from Start, the rate ramps linearly to each stage's Target
// over the stage's Duration (a stage whose target equals the rate before it
// holds). After the last stage the last target holds.
type RateProfile struct {
	Start  float64 // requests per second at 0
	Stages []RateStage
}

// RateStage is one entry of rate.stages.
type RateStage struct {
	Duration time.Duration
	Target   float64 // requests per second at the stage's end
}

// never is a time after every arrival: TimeOf's answer when the rate has
// fallen to zero for good before x arrivals.
const never = time.Duration(math.MaxInt64)

// Total is the stages' total duration.
func (p *RateProfile) Total() time.Duration {
	var d time.Duration
	for _, s := range p.Stages {
		d += s.Duration
	}
	return d
}

// segments calls f with every stage as (start, length in seconds, rate at
// its start, rate at its end, arrivals before it) until f returns false.
// Every method walks the stages through it, in the same order, so that
// Arrivals and TimeOf agree to the last bit from one call to the next.
func (p *RateProfile) segments(f func(t0, d, r0, r1, before float64) bool) (end, last, total float64) {
	r0 := p.Start
	for _, s := range p.Stages {
		d := s.Duration.Seconds()
		if !f(end, d, r0, s.Target, total) {
			return end, r0, total
		}
		// The explicit conversions forbid fused multiply-adds, so the
		// schedule is bit-identical on every architecture.
		total += float64(float64(r0+s.Target) / 2 * d)
		end += d
		r0 = s.Target
	}
	return end, r0, total
}

// At returns the rate at t, in requests per second.
func (p *RateProfile) At(t time.Duration) float64 {
	x := t.Seconds()
	rate := math.NaN()
	_, last, _ := p.segments(func(t0, d, r0, r1, _ float64) bool {
		if x < t0+d {
			rate = r0 + float64((r1-r0)*((x-t0)/d))
			return false
		}
		return true
	})
	if math.IsNaN(rate) {
		return last
	}
	return rate
}

// Arrivals returns the integral of the rate over [0, t): how many requests
// the profile sends before t on average.
func (p *RateProfile) Arrivals(t time.Duration) float64 {
	x := t.Seconds()
	n := math.NaN()
	end, last, total := p.segments(func(t0, d, r0, r1, before float64) bool {
		if x < t0+d {
			u := x - t0
			n = before + float64(r0*u) + float64((r1-r0)/d*u*u/2)
			return false
		}
		return true
	})
	if math.IsNaN(n) {
		return total + float64(last*(x-end))
	}
	return n
}

// TimeOf is the inverse of Arrivals: the first t with Arrivals(t) >= x,
// for x >= 0. It is a time after every run when the rate has fallen to
// zero for good before x.
func (p *RateProfile) TimeOf(x float64) time.Duration {
	at := math.NaN()
	end, last, total := p.segments(func(t0, d, r0, r1, before float64) bool {
		area := float64(float64(r0+r1) / 2 * d)
		if area > 0 && x <= before+area {
			at = t0 + rampTime(x-before, r0, r1, d)
			return false
		}
		return true
	})
	if math.IsNaN(at) {
		if last <= 0 {
			return never
		}
		at = end + (x-total)/last
	}
	if at*1e9 >= float64(never) {
		return never
	}
	return time.Duration(at * 1e9)
}

// rampTime returns how long, on a ramp from r0 to r1 over d seconds, the
// first n arrivals take: the root u in [0, d] of r0 u + a u²/2 = n, with
// a = (r1-r0)/d, in the form that is stable for a of either sign and 0.
func rampTime(n, r0, r1, d float64) float64 {
	if n <= 0 {
		return 0
	}
	a := (r1 - r0) / d
	den := r0 + math.Sqrt(max(float64(r0*r0)+float64(2*a*n), 0))
	if den <= 0 {
		return d
	}
	return min(2*n/den, d)
}

// Mean returns the mean rate over a run of duration d.
func (p *RateProfile) Mean(d time.Duration) float64 {
	return p.Arrivals(d) / d.Seconds()
}

// Peak returns the highest rate over a run of duration d.
func (p *RateProfile) Peak(d time.Duration) float64 {
	peak := p.Start
	var t time.Duration
	for _, s := range p.Stages {
		if t >= d {
			break
		}
		if t+s.Duration > d {
			peak = max(peak, p.At(d))
			break
		}
		peak = max(peak, s.Target)
		t += s.Duration
	}
	return peak
}

// Scaled returns the profile with every rate multiplied by f.
func (p *RateProfile) Scaled(f float64) *RateProfile {
	q := &RateProfile{Start: p.Start * f, Stages: make([]RateStage, len(p.Stages))}
	for i, s := range p.Stages {
		q.Stages[i] = RateStage{Duration: s.Duration, Target: s.Target * f}
	}
	return q
}

// validate checks the profile of a run of duration d.
func (p *RateProfile) validate(d time.Duration) error {
	switch {
	case len(p.Stages) == 0:
		return fieldErr("rate.stages", "needs at least one stage, e.g. [{duration: 10s, target: 2000}]")
	case len(p.Stages) > MaxRateStages:
		return fieldErr("rate.stages", "%d stages; at most %d", len(p.Stages), MaxRateStages)
	}
	for i, s := range p.Stages {
		name := fmt.Sprintf("rate.stages[%d]", i)
		switch {
		case s.Duration <= 0:
			return fieldErr(name+".duration", "must be > 0, got %v", s.Duration)
		case !(s.Target >= 0) || s.Target > MaxRate:
			return fieldErr(name+".target", "must be within [0, %d] requests per second, got %v", int(MaxRate), s.Target)
		}
	}
	// After the stages: start defaults to the first target.
	if !(p.Start >= 0) || p.Start > MaxRate {
		return fieldErr("rate.start", "must be within [0, %d] requests per second, got %v", int(MaxRate), p.Start)
	}
	if !(p.Arrivals(d) >= 1) {
		return fieldErr("rate.stages", "send fewer than one request in the run's %v; give a target > 0", d)
	}
	return nil
}

// fileRate is rate: a number of requests per second, or
// {start: N, stages: [{duration: D, target: N}, ...]}.
type fileRate struct {
	Value  float64
	Start  *float64
	Stages []fileStage
	staged bool
}

type fileStage struct {
	Duration string   `yaml:"duration"`
	Target   *float64 `yaml:"target"`
}

func (r *fileRate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if err := n.Decode(&r.Value); err != nil {
			return fieldErr("rate", "want requests per second or {stages: [{duration: 10s, target: 2000}, ...]}, got %q", n.Value)
		}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fieldErr("rate", "line %d: want requests per second or {stages: [{duration: 10s, target: 2000}, ...]}", n.Line)
	}
	// Node.Decode does not carry the file's KnownFields: check keys here.
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "start", "stages":
		default:
			return fieldErr("rate."+k, "line %d: unknown field (rate takes start and stages)", n.Content[i].Line)
		}
	}
	var plain struct {
		Start  *float64    `yaml:"start"`
		Stages []yaml.Node `yaml:"stages"`
	}
	if err := n.Decode(&plain); err != nil {
		return fieldErr("rate", "%v", err)
	}
	r.Start, r.staged = plain.Start, true
	for i, sn := range plain.Stages {
		name := fmt.Sprintf("rate.stages[%d]", i)
		if sn.Kind != yaml.MappingNode {
			return fieldErr(name, "line %d: want {duration: 10s, target: 2000}", sn.Line)
		}
		for j := 0; j+1 < len(sn.Content); j += 2 {
			if k := sn.Content[j].Value; k != "duration" && k != "target" {
				return fieldErr(name+"."+k, "line %d: unknown field (a stage takes duration and target)", sn.Content[j].Line)
			}
		}
		var s fileStage
		if err := sn.Decode(&s); err != nil {
			return fieldErr(name, "%v", err)
		}
		r.Stages = append(r.Stages, s)
	}
	return nil
}

// build returns the profile the file gives (nil for a constant rate) and
// the run's duration: durationField when given (it must then equal the
// stages' total), else the stages' total.
func (r *fileRate) build(durationField string) (*RateProfile, time.Duration, error) {
	p := &RateProfile{Stages: make([]RateStage, len(r.Stages))}
	for i, s := range r.Stages {
		name := fmt.Sprintf("rate.stages[%d]", i)
		if s.Duration == "" {
			return nil, 0, fieldErr(name+".duration", "is required, e.g. 10s")
		}
		d, err := time.ParseDuration(s.Duration)
		if err != nil {
			return nil, 0, fieldErr(name+".duration", "want a duration like \"10s\", got %q", s.Duration)
		}
		if s.Target == nil {
			return nil, 0, fieldErr(name+".target", "is required: the rate at the stage's end, in requests per second")
		}
		p.Stages[i] = RateStage{Duration: d, Target: *s.Target}
	}
	if len(p.Stages) == 0 {
		return nil, 0, fieldErr("rate.stages", "needs at least one stage, e.g. [{duration: 10s, target: 2000}]")
	}
	p.Start = p.Stages[0].Target
	if r.Start != nil {
		p.Start = *r.Start
	}
	total := p.Total()
	if durationField == "" {
		return p, total, nil
	}
	d, err := time.ParseDuration(durationField)
	if err != nil {
		return nil, 0, fieldErr("duration", "want a duration like \"30s\" or \"10ms\", got %q", durationField)
	}
	if d != total {
		return nil, 0, fieldErr("duration", "%v differs from the total of rate.stages (%v); leave duration out to run the stages, or make them agree", d, total)
	}
	return p, d, nil
}

package reports

import (
	"fmt"
	"math"
)

// Agreement tolerances of a calibrated simulation with the real run
// (Agrees): AgreeRelative of the real value, or AgreeAbsolute for a ratio
// (0.5 percentage points), whichever is larger.
const (
	AgreeRelative = 0.10
	AgreeAbsolute = 0.005
)

// Agrees reports whether a simulated value agrees with the real one within
// AgreeRelative of the real value or, for a ratio, AgreeAbsolute, whichever
// is larger. NaN agrees with nothing.
func Agrees(sim, real float64, ratio bool) bool {
	tol := AgreeRelative * math.Abs(real)
	if ratio {
		tol = max(tol, AgreeAbsolute)
	}
	return math.Abs(sim-real) <= tol+1e-12
}

// simVsRealTable is the calibrated simulation's key metric, faulty share
// and p99 beside the real run's, per strategy both measured; nil when s
// was not calibrated from a run.
func simVsRealTable(s *Summary) *table {
	c := s.CalibratedFrom
	if c == nil || len(c.Real) == 0 {
		return nil
	}
	real := map[string]*RealFigures{}
	for i := range c.Real {
		real[c.Real[i].Name] = &c.Real[i]
	}
	key, _ := LookupMetric(VerdictOf(s).Metric)
	share, _ := LookupMetric("faulty_share")
	p99, _ := LookupMetric("p99_ms")
	t := &table{Columns: []column{{Head: "strategy"},
		{Head: key.Head + " sim", Title: "The simulation's " + key.Label + ".", Num: true, Key: true},
		{Head: key.Head + " real", Title: "The real run's " + key.Label + ".", Num: true},
		{Head: share.Head + " sim", Title: "The simulation's " + share.Label + ".", Num: true},
		{Head: share.Head + " real", Title: "The real run's " + share.Label + ".", Num: true},
		{Head: p99.Head + " sim", Num: true},
		{Head: p99.Head + " real", Num: true},
	}}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		r, ok := real[st.Name]
		if !ok {
			continue
		}
		realKey := "—"
		if r.Key != nil && r.KeyMetric == key.Name {
			realKey = key.Text(*r.Key)
			if !Agrees(key.Value(st), *r.Key, key.Kind == KindRatio) {
				realKey += " ≠"
			}
		}
		shareReal := share.Text(r.FaultyShare)
		if !Agrees(st.FaultyShare, r.FaultyShare, true) {
			shareReal += " ≠"
		}
		t.Rows = append(t.Rows, []cell{{Text: st.Name, Name: true},
			{Text: key.Text(key.Value(st)), Num: true, Key: true}, {Text: realKey, Num: true},
			{Text: share.Text(st.FaultyShare), Num: true}, {Text: shareReal, Num: true},
			{Text: p99.Text(st.LatencyMs.P99), Num: true}, {Text: p99.Text(r.P99Ms), Num: true},
		})
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// simVsRealNote says where the real figures come from and what ≠ marks.
func simVsRealNote(s *Summary) string {
	c := s.CalibratedFrom
	if c == nil {
		return ""
	}
	from := c.From
	if c.Started != nil {
		from += fmt.Sprintf(" (engine %s, backends %s, started %s)", c.Engine, c.Backends, c.Started.UTC().Format("2006-01-02 15:04:05Z"))
	}
	return fmt.Sprintf("Calibrated with the transport overhead of %s, %.0f%% of it before the instance starts on a request and the rest after its answer. "+
		"≠ marks a real figure the simulation misses by more than %.0f%% of it (or, for a share, %.1f percentage points, whichever is larger).",
		from, 100*c.PreShare, 100*AgreeRelative, 100*AgreeAbsolute)
}

package sweep

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/lbchaos/lbchaos/reports"
)

// RealDir is the folder, under a point's, of its confirming real run.
const RealDir = "real"

// Best returns the ids of the n best points of r by its key metric: each
// point's best strategy's median, better first (lower or higher as the
// metric is better). A strategy an abort stopped does not count; points
// without a figure come last, ties by id.
func Best(r *Result, n int) []int {
	m, _ := reports.LookupMetric(r.KeyMetric)
	sign := 1.0
	if m.Better == reports.HigherIsBetter {
		sign = -1
	}
	type scored struct {
		id    int
		score float64
	}
	var all []scored
	for _, p := range r.Points {
		best := math.Inf(1)
		for _, f := range p.Strategies {
			if v, ok := f.Median[r.KeyMetric]; ok && !f.Aborted {
				best = min(best, sign*v)
			}
		}
		all = append(all, scored{p.ID, best})
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmpFloat(a.score, b.score) })
	var ids []int
	for _, s := range all[:min(n, len(all))] {
		ids = append(ids, s.id)
	}
	return ids
}

// SetReal records s, the real run of point id, in r (each strategy's
// Real figures) and writes its summary.json under the point's folder.
func SetReal(dir string, r *Result, id int, s *reports.Summary) error {
	i := slices.IndexFunc(r.Points, func(p PointResult) bool { return p.ID == id })
	if i < 0 {
		return fmt.Errorf("sweep: no point %d", id)
	}
	p := &r.Points[i]
	for k := range p.Strategies {
		f := figures(p.Strategies[k].Name, []*reports.Summary{s})
		p.Strategies[k].Real = f.Median
	}
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, s); err != nil {
		return err
	}
	out := filepath.Join(dir, p.Dir, RealDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return reports.WriteFileAtomic(filepath.Join(out, reports.SummaryFile), buf.Bytes(), 0o644)
}

// Rewrite writes r's files into dir again, after SetReal.
func Rewrite(dir string, r *Result) error { return write(dir, r) }

// keepReal sets the real figures of the points a confirming run left in
// dir (a resumed sweep keeps them).
func keepReal(dir string, r *Result) {
	for i := range r.Points {
		p := &r.Points[i]
		f, err := os.Open(filepath.Join(dir, p.Dir, RealDir, reports.SummaryFile))
		if err != nil {
			continue
		}
		s, err := reports.ReadJSON(f)
		f.Close()
		if err == nil {
			for k := range p.Strategies {
				p.Strategies[k].Real = figures(p.Strategies[k].Name, []*reports.Summary{s}).Median
			}
		}
	}
}

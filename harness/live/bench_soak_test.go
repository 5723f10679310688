package live

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// BenchmarkSoak is the short form of the soak run in docs/performance-log.md: baseline
// with round robin at 4000 req/s on in-process backends for 60 s
// (LBCHAOS_SOAK_DURATION sets another length), the harness sampling its
// resources every 10 s. It reports how much RSS, open file descriptors and
// goroutines grew from the first sample at or after 20% of the run to the
// last, in percent, and the RSS at the end. Run it with -benchtime 1x.
func BenchmarkSoak(b *testing.B) {
	exp, err := experiments.Load("baseline")
	if err != nil {
		b.Fatal(err)
	}
	d := time.Minute
	if v := os.Getenv("LBCHAOS_SOAK_DURATION"); v != "" {
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("LBCHAOS_SOAK_DURATION: %v", err)
		}
	}
	e, err := exp.Apply(experiments.Overrides{Duration: d, Rate: 4000, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	var g growth
	var h *reports.Harness
	for range b.N {
		sum, err := run(context.Background(), e, Options{})
		if err != nil {
			b.Fatal(err)
		}
		st := sum.Strategies[0]
		if st.GeneratorBehind {
			b.Errorf("generator fell behind: %.0f req/s", st.AchievedRate)
		}
		h = st.Harness
		g = resourceGrowth(h.Samples, 0.2*d.Seconds())
	}
	if !g.ok {
		b.Fatalf("too few resource samples: %+v", h.Samples)
	}
	b.ReportMetric(g.rss, "rss-growth-%")
	b.ReportMetric(g.fds, "fd-growth-%")
	b.ReportMetric(g.goroutines, "goroutine-growth-%")
	b.ReportMetric(g.rssEndMB, "rss-end-MB")
	if h.Saturated {
		b.Logf("the harness saturated: %q", h.Reasons)
	}
}

// growth is how much the harness's resources grew between two samples, in
// percent.
type growth struct {
	rss, fds, goroutines float64
	rssEndMB             float64
	ok                   bool // both samples were found, with RSS and fds
}

// resourceGrowth compares the first sample at or after from seconds with
// the last one.
func resourceGrowth(samples []reports.ResourceSample, from float64) growth {
	var mark *reports.ResourceSample
	for i := range samples {
		if samples[i].TS >= from {
			mark = &samples[i]
			break
		}
	}
	if mark == nil || len(samples) < 2 || mark == &samples[len(samples)-1] {
		return growth{}
	}
	end := &samples[len(samples)-1]
	if mark.RSSBytes == nil || end.RSSBytes == nil || mark.OpenFDs == nil || end.OpenFDs == nil {
		return growth{}
	}
	pct := func(a, b int64) float64 { return 100 * float64(b-a) / float64(a) }
	return growth{
		rss:        pct(*mark.RSSBytes, *end.RSSBytes),
		fds:        pct(*mark.OpenFDs, *end.OpenFDs),
		goroutines: pct(mark.Goroutines, end.Goroutines),
		rssEndMB:   float64(*end.RSSBytes) / (1 << 20),
		ok:         true,
	}
}

package harness

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/reports"
)

// TestSummaryRateProfile: a run with rate stages records them, and its
// target_rate is their mean; a constant rate records none.
func TestSummaryRateProfile(t *testing.T) {
	exp, err := experiments.Load("burst")
	if err != nil {
		t.Fatal(err)
	}
	sum := newSummary(exp, engine.Info{Engine: "sim", Backends: "sim", Virtual: true})
	want := &reports.RateProfile{Start: 200, Stages: []reports.RateStage{
		{DurationS: 5, Target: 200}, {DurationS: 4, Target: 540}, {DurationS: 4, Target: 540},
		{DurationS: 1, Target: 200}, {DurationS: 6, Target: 200},
	}}
	if diff := cmp.Diff(want, sum.RateProfile); diff != "" {
		t.Errorf("rate_profile (-want +got):\n%s", diff)
	}
	// 1000 + 1480 + 2160 + 370 + 1200 requests in 20 s.
	if sum.TargetRate < 310.5-1e-9 || sum.TargetRate > 310.5+1e-9 || sum.DurationS != 20 {
		t.Errorf("target_rate %v over %v s, want the mean 310.5 over 20 s", sum.TargetRate, sum.DurationS)
	}
	if got := sum.RateProfile.String(); got != "from 200 req/s: 5 s to 200, 4 s to 540, 4 s to 540, 1 s to 200, 6 s to 200" {
		t.Errorf("String() = %q", got)
	}
	plain, err := experiments.Load("baseline")
	if err != nil {
		t.Fatal(err)
	}
	if sum := newSummary(plain, engine.Info{Engine: "sim", Backends: "sim", Virtual: true}); sum.RateProfile != nil || sum.TargetRate != 4000 {
		t.Errorf("constant rate: rate_profile %v, target_rate %v", sum.RateProfile, sum.TargetRate)
	}
}

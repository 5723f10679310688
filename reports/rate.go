package reports

import (
	"fmt"
	"strings"
)

// RateProfile is an experiment's rate stages (rate: {start, stages}): the
// rate ramps linearly from Start to each stage's Target over its
// DurationS, and target_rate is then the mean rate over the run.
type RateProfile struct {
	Start  float64     `json:"start"`  // requests per second at 0
	Stages []RateStage `json:"stages"` // in the order they run
}

// RateStage is one stage of a RateProfile.
type RateStage struct {
	DurationS float64 `json:"duration_s"` // the stage's length in seconds
	Target    float64 `json:"target"`     // requests per second at the stage's end
}

// String renders the profile for people: "from 200 req/s: 5 s to 200, 4 s to 540".
func (p *RateProfile) String() string {
	parts := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		parts[i] = fmt.Sprintf("%s s to %s", fmtNum(s.DurationS), fmtNum(s.Target))
	}
	return fmt.Sprintf("from %s req/s: %s", fmtNum(p.Start), strings.Join(parts, ", "))
}

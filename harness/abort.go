package harness

import (
	"fmt"
	"io"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// Aborted is Run's error when one of the experiment's abort conditions
// tripped: the strategy it stopped is in the summary with what was
// measured until then, the strategies after it were skipped, and the
// summary's Abort says what tripped.
type Aborted struct{ Abort *reports.Abort }

func (e *Aborted) Error() string {
	return "aborted: " + e.Abort.Text() + skippedText(len(e.Abort.Skipped))
}

// skippedText says how many strategies were not run, for the error.
func skippedText(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 strategy not run"
	}
	return fmt.Sprintf("; %d strategies not run", n)
}

// abortRun records in sum that abort a stopped strategy i of exp: the
// strategies after it that the engine would have run are skipped, each
// with a note giving the reason, as the engine's own skips are.
func abortRun(sum *reports.Summary, exp *experiments.Experiment, skip []string, i int, a *reports.Abort, log io.Writer) *Aborted {
	reason := "not run: aborted: " + a.Text()
	var notes []string
	for j := i + 1; j < len(exp.Strategies); j++ {
		if skip[j] != "" {
			continue
		}
		a.Skipped = append(a.Skipped, exp.Strategies[j])
		notes = append(notes, exp.Strategies[j]+": "+reason)
	}
	for _, n := range reports.MergeNotes(notes) {
		fmt.Fprintf(log, "skipped %s\n", n)
	}
	sum.Notes = append(sum.Notes, notes...)
	sum.Abort = a
	return &Aborted{Abort: a}
}

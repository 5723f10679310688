package live

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/reports"
)

// executions is what the instances of a fleet executed during one
// strategy's attack, from their own counts (faultyserver.ExecutedPath).
type executions struct {
	// perInstance counts, by instance id, the requests each executed,
	// every retry that reached it included.
	perInstance map[int]int64
	// duplicates counts the request ids executed more than once, by the
	// same instance or by several.
	duplicates int64
	// times[k] counts the request ids executed k times (k >= 1).
	times []int64
}

// tally counts, over lists (one per instance), the ids that occur more
// than once, and how many ids occur k times, in times[k].
func tally(lists [][]uint64) (duplicates int64, times []int64) {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	all := make([]uint64, 0, n)
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	times = make([]int64, 2)
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j] == all[i] {
			j++
		}
		k := j - i
		for k >= len(times) {
			times = append(times, 0)
		}
		times[k]++
		if k > 1 {
			duplicates++
		}
		i = j
	}
	return duplicates, times
}

// perRequest is the distribution of executions per request of an attack
// that sent requests: the ids executed k times, and the requests no
// instance executed as 0; nil without requests.
func (ex *executions) perRequest(requests int64) *reports.AttemptStats {
	if requests <= 0 {
		return nil
	}
	counts := slices.Clone(ex.times)
	var executed int64
	for _, n := range counts {
		executed += n
	}
	counts[0] = max(0, requests-executed)
	return engine.AttemptStatsOf(counts)
}

// readExecutions asks every instance of fl what it executed. It fails when
// an instance has no control API, does not answer, or dropped numbers
// (faultyserver.MaxExecuted): the counts would be incomplete.
func readExecutions(ctx context.Context, fl fleet.Fleet) (*executions, error) {
	backends := fl.Backends()
	for _, b := range backends {
		if b.Control == nil {
			return nil, fmt.Errorf("instance %d has no lbchaos control API", b.ID)
		}
	}
	lists := make([][]uint64, len(backends))
	errs := make([]error, len(backends))
	var wg sync.WaitGroup
	for i, b := range backends {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			x, err := b.Control.Executed(cctx)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("instance %d: %w", b.ID, err)
			case x.Dropped > 0:
				errs[i] = fmt.Errorf("instance %d kept only %d request ids and dropped %d", b.ID, len(x.Seqs), x.Dropped)
			default:
				lists[i] = x.Seqs
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	dup, times := tally(lists)
	ex := &executions{perInstance: make(map[int]int64, len(backends)), duplicates: dup, times: times}
	for i, b := range backends {
		ex.perInstance[b.ID] = int64(len(lists[i]))
	}
	return ex, nil
}

// executionsMeasurable says why the instances' counts of what they
// executed cannot be read for exp ("" when they can): they count the
// load generator's request ids over HTTP, so not under gRPC, nor with
// several generators (whose ids overlap), nor on instances without
// lbchaos's control API, nor across a restart (which starts the counts
// afresh).
func executionsMeasurable(exp *experiments.Experiment) string {
	switch {
	case exp.Protocol == experiments.ProtocolGRPC:
		return "gRPC calls carry no request id"
	case exp.Generators > 1:
		return "several generators number their requests each from 0"
	case len(exp.Tiers) > 0:
		return "a tier's calls downstream carry ids of their caller's own"
	}
	for _, x := range exp.Instances.External {
		if x.Sidecar == "" {
			return "external instances without an lbchaos sidecar do not count them"
		}
	}
	for _, f := range exp.Faults {
		if c, ok := f.Spec.(faultyserver.ContainerFault); ok && c.Relocates() {
			return fmt.Sprintf("mode %q restarts an instance, whose counts start afresh", f.Spec.Mode())
		}
	}
	return ""
}

// setExecutions reads what the instances executed during the attack and
// sets the strategy's duplicate_executions; for a proxy, the attempts per
// request (what the instances executed per request: an attempt no
// instance read is not counted) and, when its log does not list every
// attempt (logged false), each instance's attempts.
// nginx's log does list them (logged): its count, which
// includes attempts that never reached an instance (a refused
// connection), as the engine's own strategies' does, is kept, with a note
// where the instances count otherwise. It adds a note when it cannot read
// the counts; nothing for an experiment whose instances cannot count
// (executionsMeasurable).
func (a *attack) setExecutions(ctx context.Context, m *engine.Measurement, logged bool) {
	if a.fl == nil || executionsMeasurable(a.job.Exp) != "" {
		return
	}
	ex, err := readExecutions(ctx, a.fl)
	if err != nil {
		m.Notes = append(m.Notes, fmt.Sprintf("%s: the instances' counts of the requests they executed could not be read (%v); duplicate_executions is not measured.", a.job.Name(), err))
		return
	}
	if crashed := crashedInstances(m.Events); len(crashed) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%s: instance %s crashed during the attack; what it executed before is not counted, and duplicate_executions may count too few.", a.job.Name(), strings.Join(crashed, ", ")))
	}
	d := ex.duplicates
	m.Strategy.DuplicateExecutions = &d
	if !a.proxied {
		return
	}
	// The client sees one attempt per request through a proxy; the
	// instances see the proxy's retries.
	m.Strategy.AttemptsPerRequest = ex.perRequest(m.Strategy.Requests)
	if !logged {
		setAttempts(&m.Strategy, ex.perInstance)
		return
	}
	if diff := attemptsDiffer(&m.Strategy, ex.perInstance); diff != "" {
		m.Notes = append(m.Notes, fmt.Sprintf("%s: the proxy's log and the instances count different attempts (%s): an attempt the log names that its instance never read (a refused connection, a reset before the request arrived) counts only in the log's attempts, which the report shows.", a.job.Name(), diff))
	}
}

// attemptsDiffer lists the instances of st whose attempts (a proxy's log)
// differ from what they executed, "instance I: log N, executed M" joined
// by "; ", "" when none does.
func attemptsDiffer(st *reports.Strategy, executed map[int]int64) string {
	var out []string
	for _, in := range st.Instances {
		if in.Attempts != nil && *in.Attempts != executed[in.ID] {
			out = append(out, fmt.Sprintf("instance %d: log %d, executed %d", in.ID, *in.Attempts, executed[in.ID]))
		}
	}
	return strings.Join(out, "; ")
}

// crashedInstances names, sorted, the instances with a crash event.
func crashedInstances(events []reports.Event) []string {
	seen := map[int]bool{}
	for _, e := range events {
		if e.Kind == reports.EventCrash {
			seen[e.Instance] = true
		}
	}
	var ids []int
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return out
}

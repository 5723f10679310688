package reports

import (
	"fmt"
	"math"
	"strings"
)

// Harness is the load generator's own health during one strategy's attack,
// as the real engine measures it in its own process: CPU time
// (getrusage), how late a fine timer fires (scheduling lag), how late
// requests leave against the arrival schedule (send lag), and requests
// queued in the client at the connection bound. A simulated run has none.
//
// When Saturated is true the harness, not the strategy, limited what was
// measured from SaturatedFromS on: requests left late, waited for a CPU or
// for a connection in the client, and their latencies include that wait.
type Harness struct {
	// Cores is how many CPUs the process could use: the smaller of the
	// machine's CPUs and GOMAXPROCS.
	Cores float64 `json:"cores"`
	// MachineCPUs is the machine's CPU count, against which
	// HarnessSecond.MachineCores is measured.
	MachineCPUs int `json:"machine_cpus,omitempty"`
	// BackendsInProcess is true when the backends ran inside the harness's
	// process (--backends process): their CPU is part of CPUCores, and a
	// saturated CPU is theirs as much as the generator's.
	BackendsInProcess bool `json:"backends_in_process,omitempty"`
	// TickMs is the period of the timer whose lateness is the scheduling
	// lag.
	TickMs float64 `json:"tick_ms"`
	// CPUCoresP50 and CPUCoresMax are the process's CPU use (user + system)
	// over the attack's seconds, in cores: the median and the busiest
	// second.
	CPUCoresP50 float64 `json:"cpu_cores_p50"`
	CPUCoresMax float64 `json:"cpu_cores_max"`
	// SchedLagMs is how late the timer fired, over the whole attack: the
	// time a ready goroutine of the harness waited for a CPU, plus timer
	// slack.
	SchedLagMs LagStats `json:"sched_lag_ms"`
	// Saturated is the verdict: at least two consecutive seconds of the
	// attack were saturated (see HarnessSecond.Saturated).
	Saturated bool `json:"saturated"`
	// SaturatedFromS is the start, in seconds from the start of the
	// attack, of the first saturated second that the next one (or the
	// attack's end) confirms; absent when not saturated.
	SaturatedFromS *float64 `json:"saturated_from_s,omitempty"`
	// SaturatedSeconds counts the saturated seconds of the attack.
	SaturatedSeconds int `json:"saturated_seconds"`
	// Reasons are the measurements behind the verdict over the saturated
	// seconds, in plain phrases ("CPU 1.98 of 2 cores"); absent when not
	// saturated.
	Reasons []string `json:"reasons,omitempty"`
	// Seconds is the per-second series, from the start of the attack
	// until its last request ended.
	Seconds []HarnessSecond `json:"seconds"`
	// Samples are the process's resources at the start, every 10 s and at
	// the end.
	Samples []ResourceSample `json:"samples,omitempty"`
}

// HarnessSecond is the harness's health in second TS of an attack,
// [TS, TS+1).
type HarnessSecond struct {
	TS int `json:"t_s"` // the second's start, in seconds from the start of the attack
	// CPUCores is the process's CPU use (user + system) in cores.
	CPUCores float64 `json:"cpu_cores"`
	// MachineCores is the whole machine's busy CPUs (/proc/stat), other
	// processes included; absent where it is not known.
	MachineCores *float64 `json:"machine_cores,omitempty"`
	// SchedLagP99Ms and SchedLagMaxMs are how late the timer fired.
	SchedLagP99Ms float64 `json:"sched_lag_p99_ms"`
	SchedLagMaxMs float64 `json:"sched_lag_max_ms"`
	// Sent counts the requests sent in this second; SendLagMeanMs and
	// SendLagMaxMs are how far behind the arrival schedule they left.
	Sent          int64   `json:"sent"`
	SendLagMeanMs float64 `json:"send_lag_mean_ms"`
	SendLagMaxMs  float64 `json:"send_lag_max_ms"`
	// InFlight is the requests under way at the end of the second.
	InFlight int64 `json:"in_flight"`
	// CapHits counts the requests that found their instance at the
	// connection bound during the second and queued in the client.
	CapHits int64 `json:"cap_hits"`
	// Saturated marks a second of the attack in which the harness was
	// the bottleneck.
	Saturated bool `json:"saturated,omitempty"`
}

// ResourceSample is the harness process's resources at TS seconds from the
// start of an attack. RSSBytes and OpenFDs are absent where the system
// does not tell (they are read from /proc/self).
type ResourceSample struct {
	TS         float64 `json:"t_s"`                 // seconds from the start of the attack
	RSSBytes   *int64  `json:"rss_bytes,omitempty"` // resident memory
	OpenFDs    *int64  `json:"open_fds,omitempty"`  // open file descriptors
	Goroutines int64   `json:"goroutines"`          // the process's goroutines
}

// HarnessSaturation names a strategy whose numbers describe the load
// generator rather than the strategy, from FromS seconds into its attack.
type HarnessSaturation struct {
	Strategy string  `json:"strategy"` // the strategy's name
	FromS    float64 `json:"from_s"`   // its harness's saturated_from_s
	// Summary says it in a sentence, as the reports' first lines do.
	Summary string `json:"summary"`
}

// HarnessSaturations lists the strategies of s whose harness saturated,
// in the order of s.Strategies, each with the sentence the reports open
// with.
func HarnessSaturations(s *Summary) []HarnessSaturation {
	var out []HarnessSaturation
	for i := range s.Strategies {
		st := &s.Strategies[i]
		h := st.Harness
		if h == nil || !h.Saturated || h.SaturatedFromS == nil {
			continue
		}
		out = append(out, HarnessSaturation{Strategy: st.Name, FromS: *h.SaturatedFromS, Summary: harnessSentence(st)})
	}
	return out
}

// harnessBanner returns the lines that open a report of s whose harness
// saturated: one per strategy, none when it never did.
func harnessBanner(s *Summary) []string {
	var out []string
	for _, h := range HarnessSaturations(s) {
		out = append(out, h.Summary)
	}
	return out
}

// harnessSentence says that st's numbers, from the second its harness
// saturated, describe the harness and not the strategy.
func harnessSentence(st *Strategy) string {
	h := st.Harness
	var b strings.Builder
	seconds := "seconds"
	if h.SaturatedSeconds == 1 {
		seconds = "second"
	}
	fmt.Fprintf(&b, "The harness saturated: from %s s on (%d saturated %s of %s), %s's numbers describe this machine's load generator, not the strategy",
		fmtNum(*h.SaturatedFromS), h.SaturatedSeconds, seconds, fmtNum(math.Ceil(st.ElapsedS)), st.Name)
	if len(h.Reasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(h.Reasons, "; "))
	}
	b.WriteString(".")
	if h.BackendsInProcess {
		b.WriteString(" The backends ran in the harness's process and shared its CPU.")
	}
	return b.String()
}

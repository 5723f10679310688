package live

import (
	"fmt"
	"slices"

	"github.com/lbchaos/lbchaos/reports"
)

// The verdict on the harness (judge). A second of the attack is saturated
// when the generator could not keep the arrival schedule and the reason is
// a lack of CPU for this process:
//
//	send lag mean >= lateSendMs  AND  (CPU full  OR  scheduling lag p99 >= schedLateMs)
//
// where the CPU is full when this process used cpuFullShare of the cores it
// may use, or the whole machine was that busy (other processes on a shared
// machine take the CPU the harness needs just as well).
//
// Send lag alone is not enough: a generator may fall behind for reasons
// other than CPU, and the run already says when it fell behind. CPU or
// scheduling lag alone is not either: in-process backends may keep the CPU
// busy, and a shared machine delays timers, while requests still leave on
// time. A mean send lag of 20 ms shifts every request of the second by
// more than a typical service time, and a timer 10 ms late at p99 means the
// harness's goroutines (the pacer, the workers, the connection readers,
// in-process servers) waited that long for a CPU.
//
// The thresholds leave a margin over a healthy run on this project's
// shared 2-core machine: at 500–2000 req/s, with the race detector too,
// the mean send lag of a second stays within a few milliseconds even with
// the machine's load average above 10, while past the machine's capacity it
// grows to seconds within the first second or two (see
// TestHarnessSaturation and docs/performance-log.md).
//
// The harness saturated when two consecutive seconds were saturated (or
// the last second of the attack was), so that one pause of the collector
// does not name the harness; it did so from the first of them.
const (
	lateSendMs   = 20.0
	cpuFullShare = 0.9
	schedLateMs  = 10.0
)

// saturatedSecond is the verdict on one second of an attack by a process
// that may use cores CPUs of a machine's machineCPUs.
func saturatedSecond(s reports.HarnessSecond, cores float64, machineCPUs int) bool {
	cpuFull := cores > 0 && s.CPUCores >= cpuFullShare*cores ||
		s.MachineCores != nil && machineCPUs > 0 && *s.MachineCores >= cpuFullShare*float64(machineCPUs)
	return s.SendLagMeanMs >= lateSendMs && (cpuFull || s.SchedLagP99Ms >= schedLateMs)
}

// judge sets h's verdict from its series: each of the first attack
// seconds is marked, and when the harness saturated, from which second
// and why.
func judge(h *reports.Harness, attack int) {
	h.Saturated, h.SaturatedFromS, h.SaturatedSeconds, h.Reasons = false, nil, 0, nil
	n := min(attack, len(h.Seconds))
	var cpu, machine, sched []float64
	var sendMax float64
	var caps int64
	for k := range n {
		s := &h.Seconds[k]
		s.Saturated = saturatedSecond(*s, h.Cores, h.MachineCPUs)
		if !s.Saturated {
			continue
		}
		h.SaturatedSeconds++
		cpu = append(cpu, s.CPUCores)
		if s.MachineCores != nil {
			machine = append(machine, *s.MachineCores)
		}
		sched = append(sched, s.SchedLagP99Ms)
		sendMax = max(sendMax, s.SendLagMaxMs)
		caps += s.CapHits
	}
	for k := range n {
		if h.Seconds[k].Saturated && (k == n-1 || h.Seconds[k+1].Saturated) {
			from := float64(k)
			h.Saturated, h.SaturatedFromS = true, &from
			break
		}
	}
	if !h.Saturated {
		return
	}
	own := medianOf(cpu)
	h.Reasons = append(h.Reasons, fmt.Sprintf("CPU %.2f of %g cores", own, h.Cores))
	if len(machine) > 0 {
		busy := medianOf(machine)
		text := fmt.Sprintf("the whole machine %.2f of %d busy", busy, h.MachineCPUs)
		if others := busy - own; others >= 0.05 {
			text += fmt.Sprintf(", %.2f of them with other processes", others)
		}
		h.Reasons = append(h.Reasons, text)
	}
	h.Reasons = append(h.Reasons,
		fmt.Sprintf("scheduler %.0f ms late at p99", medianOf(sched)),
		fmt.Sprintf("requests sent up to %s behind schedule", fmtLag(sendMax)))
	if caps > 0 {
		h.Reasons = append(h.Reasons, fmt.Sprintf("%d requests queued in the client at the connection bound", caps))
	}
}

// medianOf is the median of xs (not empty); xs is sorted in place.
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// fmtLag formats a lag in milliseconds as ms below a second, s above.
func fmtLag(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

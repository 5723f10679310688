package live

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lbchaos/lbchaos/reports"
)

// sec is a second of a harness series: process CPU in cores, the machine's
// busy cores (negative: unknown), scheduling lag p99 and mean send lag in
// ms.
func sec(cpu, machine, sched, send float64) reports.HarnessSecond {
	s := reports.HarnessSecond{CPUCores: cpu, SchedLagP99Ms: sched, SchedLagMaxMs: sched, SendLagMeanMs: send, SendLagMaxMs: 2 * send}
	if machine >= 0 {
		s.MachineCores = &machine
	}
	return s
}

func TestSaturatedSecond(t *testing.T) {
	cases := []struct {
		name string
		s    reports.HarnessSecond
		want bool
	}{
		{"healthy", sec(0.4, 0.6, 1.5, 0.3), false},
		{"late sends, own CPU full", sec(1.9, 2, 3, 25), true},
		{"late sends, machine full by others", sec(0.3, 1.95, 3, 25), true},
		{"late sends, scheduler late", sec(0.5, 1.0, 12, 25), true},
		{"late sends, CPU and scheduler fine", sec(0.5, 1.0, 4, 500), false},
		{"late sends, machine unknown, own CPU fine", sec(0.5, -1, 4, 500), false},
		{"CPU full, sends on time", sec(2, 2, 40, 5), false},
		{"scheduler late, sends on time", sec(0.5, 1, 80, 19.9), false},
		{"at the thresholds", sec(1.8, 1.0, 10, 20), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := saturatedSecond(c.s, 2, 2); got != c.want {
				t.Errorf("saturatedSecond(%+v) = %v, want %v", c.s, got, c.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	ok := sec(0.4, 0.6, 1.5, 0.3)
	bad := sec(1.98, 2, 14, 400)
	pause := sec(0.5, 0.8, 30, 60) // one collector pause: late, not full
	cases := []struct {
		name     string
		series   []reports.HarnessSecond
		attack   int
		from     float64 // -1: not saturated
		seconds  int
		saturate []bool
	}{
		{"healthy", []reports.HarnessSecond{ok, ok, ok}, 3, -1, 0, []bool{false, false, false}},
		{"from the start", []reports.HarnessSecond{bad, bad, bad}, 3, 0, 3, []bool{true, true, true}},
		{"from second 2", []reports.HarnessSecond{ok, ok, bad, bad, bad}, 5, 2, 3, []bool{false, false, true, true, true}},
		{"one pause is not saturation", []reports.HarnessSecond{ok, pause, ok, ok}, 4, -1, 1, []bool{false, true, false, false}},
		{"one blip, then saturated", []reports.HarnessSecond{ok, bad, ok, bad, bad}, 5, 3, 3, []bool{false, true, false, true, true}},
		{"the attack's last second", []reports.HarnessSecond{ok, ok, bad}, 3, 2, 1, []bool{false, false, true}},
		// The drain after the attack is not judged: no requests leave.
		{"draining", []reports.HarnessSecond{ok, ok, bad, bad}, 2, -1, 0, []bool{false, false, false, false}},
		{"shorter series than the attack", []reports.HarnessSecond{ok, bad, bad}, 5, 1, 2, []bool{false, true, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &reports.Harness{Cores: 2, MachineCPUs: 2, Seconds: append([]reports.HarnessSecond(nil), c.series...)}
			judge(h, c.attack)
			if h.Saturated != (c.from >= 0) {
				t.Fatalf("saturated %v, want %v", h.Saturated, c.from >= 0)
			}
			if c.from >= 0 && (h.SaturatedFromS == nil || *h.SaturatedFromS != c.from) {
				t.Errorf("saturated from %v, want %v", h.SaturatedFromS, c.from)
			}
			if c.from < 0 && (h.SaturatedFromS != nil || h.Reasons != nil) {
				t.Errorf("not saturated, yet from %v, reasons %q", h.SaturatedFromS, h.Reasons)
			}
			if h.SaturatedSeconds != c.seconds {
				t.Errorf("%d saturated seconds, want %d", h.SaturatedSeconds, c.seconds)
			}
			var got []bool
			for _, s := range h.Seconds {
				got = append(got, s.Saturated)
			}
			if d := cmp.Diff(c.saturate, got); d != "" {
				t.Errorf("per-second verdicts (-want +got):\n%s", d)
			}
		})
	}
}

func TestJudgeReasons(t *testing.T) {
	cases := []struct {
		name   string
		series []reports.HarnessSecond
		want   []string
	}{
		{"own CPU", []reports.HarnessSecond{sec(1.96, 2, 14, 400), sec(2, 2, 16, 1200)}, []string{
			"CPU 1.98 of 2 cores", "the whole machine 2.00 of 2 busy", "scheduler 15 ms late at p99", "requests sent up to 2.4 s behind schedule"}},
		{"other processes", []reports.HarnessSecond{sec(0.2, 2, 120, 300), sec(0.3, 1.9, 80, 200)}, []string{
			"CPU 0.25 of 2 cores", "the whole machine 1.95 of 2 busy, 1.70 of them with other processes", "scheduler 100 ms late at p99", "requests sent up to 600 ms behind schedule"}},
		{"machine unknown", []reports.HarnessSecond{sec(1.9, -1, 14, 40), sec(1.9, -1, 14, 40)}, []string{
			"CPU 1.90 of 2 cores", "scheduler 14 ms late at p99", "requests sent up to 80 ms behind schedule"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &reports.Harness{Cores: 2, MachineCPUs: 2, Seconds: c.series}
			judge(h, len(c.series))
			if d := cmp.Diff(c.want, h.Reasons); d != "" {
				t.Errorf("reasons (-want +got):\n%s", d)
			}
		})
	}
	// Requests queued at the connection bound are named with the count.
	s := sec(1.9, 2, 14, 400)
	s.CapHits = 700
	h := &reports.Harness{Cores: 2, MachineCPUs: 2, Seconds: []reports.HarnessSecond{s, s}}
	judge(h, 2)
	if last := h.Reasons[len(h.Reasons)-1]; !strings.HasPrefix(last, "1400 requests queued") {
		t.Errorf("last reason %q, want the 1400 requests queued at the bound", last)
	}
}

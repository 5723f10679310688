package live

import (
	"runtime"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/reports"
)

// TestMonitorMeasuresTheProcess runs the monitor for a second and a bit
// while a goroutine burns CPU, with send lags fed as the result loop
// does, and checks each series against what happened.
func TestMonitorMeasuresTheProcess(t *testing.T) {
	start := time.Now()
	var caps, inflight int64 = 0, 7
	m := startMonitor(monitorConfig{start: start, sampleEvery: 300 * time.Millisecond, inProcess: true,
		capHits: func() int64 { return caps }, inFlight: func() int64 { return inflight }})
	cpu0, ok := processCPU()
	burn := make(chan time.Duration)
	go func() {
		x := 0
		for time.Since(start) < 1100*time.Millisecond {
			x++
		}
		runtime.KeepAlive(x)
		c, _ := processCPU()
		burn <- c - cpu0
	}()
	// As the result loop would: by send time, lag behind schedule.
	m.sendLag(200*time.Millisecond, 5*time.Millisecond)
	m.sendLag(500*time.Millisecond, 15*time.Millisecond)
	m.sendLag(1050*time.Millisecond, 12*time.Millisecond)
	burned := <-burn
	time.Sleep(time.Until(start.Add(1250 * time.Millisecond)))
	h := m.stop(1200 * time.Millisecond)

	if h.TickMs != 5 || h.Cores < 1 || h.MachineCPUs != runtime.NumCPU() || !h.BackendsInProcess {
		t.Errorf("tick %v ms, cores %v, machine CPUs %d, in process %v", h.TickMs, h.Cores, h.MachineCPUs, h.BackendsInProcess)
	}
	if len(h.Seconds) != 2 {
		t.Fatalf("%d seconds in 1.25 s, want 2 (the last one partial): %+v", len(h.Seconds), h.Seconds)
	}
	s0, s1 := h.Seconds[0], h.Seconds[1]
	if s0.TS != 0 || s1.TS != 1 {
		t.Errorf("seconds numbered %d, %d", s0.TS, s1.TS)
	}
	if s0.Sent != 2 || s0.SendLagMeanMs != 10 || s0.SendLagMaxMs != 15 || s1.Sent != 1 || s1.SendLagMeanMs != 12 {
		t.Errorf("send lag by second: %+v, %+v", s0, s1)
	}
	if s0.InFlight != 7 || s0.CapHits != 0 {
		t.Errorf("second 0: %d in flight, %d cap hits", s0.InFlight, s0.CapHits)
	}
	if ok && runtime.GOOS == "linux" {
		// The burning goroutine's CPU falls in the first second; the
		// monitor cannot see less than the process burned in it.
		if s0.CPUCores <= 0 || s0.CPUCores > h.Cores+0.05 {
			t.Errorf("second 0: %.2f cores of %v (the burner used %v)", s0.CPUCores, h.Cores, burned)
		}
		if s0.MachineCores == nil || *s0.MachineCores < s0.CPUCores-0.05 {
			t.Errorf("second 0: machine %v cores, below this process's %.2f", s0.MachineCores, s0.CPUCores)
		}
		if want := burned.Seconds() * 0.8; s0.CPUCores < want {
			t.Errorf("second 0: %.2f cores, yet the burner alone used %v in 1.1 s", s0.CPUCores, burned)
		}
	}
	if s0.SchedLagMaxMs < s0.SchedLagP99Ms || h.SchedLagMs.Max < h.SchedLagMs.P99 || h.SchedLagMs.P99 < h.SchedLagMs.P50 {
		t.Errorf("scheduling lag out of order: second %+v, overall %+v", s0, h.SchedLagMs)
	}
	if h.CPUCoresMax < h.CPUCoresP50 {
		t.Errorf("CPU max %v below p50 %v", h.CPUCoresMax, h.CPUCoresP50)
	}
	// Samples at the start, 0.3, 0.6, 0.9, 1.2 s and the end.
	if len(h.Samples) < 5 {
		t.Fatalf("%d resource samples in 1.25 s at 300 ms: %+v", len(h.Samples), h.Samples)
	}
	for i, s := range h.Samples {
		if i > 0 && s.TS < h.Samples[i-1].TS {
			t.Errorf("sample %d at %v s, before the one before", i, s.TS)
		}
		if s.Goroutines < 2 {
			t.Errorf("sample %d: %d goroutines", i, s.Goroutines)
		}
		if runtime.GOOS == "linux" && (s.RSSBytes == nil || *s.RSSBytes < 1<<20 || s.OpenFDs == nil || *s.OpenFDs < 3) {
			t.Errorf("sample %d: RSS %v, fds %v", i, s.RSSBytes, s.OpenFDs)
		}
	}
	if h.Saturated {
		t.Errorf("saturated with sends 15 ms late at most: %q", h.Reasons)
	}
}

func TestMonitorStopsOnANilMonitor(t *testing.T) {
	var m *monitor
	m.sendLag(time.Second, time.Millisecond) // the loop without a monitor
	if h := m.stop(time.Second); h != nil {
		t.Errorf("nil monitor returned %+v", h)
	}
}

func TestResourceGrowth(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	samples := []reports.ResourceSample{
		{TS: 0, RSSBytes: p(10 << 20), OpenFDs: p(20), Goroutines: 100},
		{TS: 10, RSSBytes: p(100 << 20), OpenFDs: p(400), Goroutines: 600},
		{TS: 20, RSSBytes: p(110 << 20), OpenFDs: p(400), Goroutines: 550},
		{TS: 30, RSSBytes: p(110 << 20), OpenFDs: p(420), Goroutines: 600},
	}
	g := resourceGrowth(samples, 10)
	if !g.ok || g.rss != 10 || g.fds != 5 || g.goroutines != 0 || g.rssEndMB != 110 {
		t.Errorf("growth from 10 s: %+v", g)
	}
	if g := resourceGrowth(samples, 12); !g.ok || g.goroutines != 600.0/550*100-100 {
		t.Errorf("growth from 12 s (the sample at 20 s): %+v", g)
	}
	if g := resourceGrowth(samples, 31); g.ok {
		t.Errorf("no sample after 31 s, yet %+v", g)
	}
	if g := resourceGrowth(samples[:1], 0); g.ok {
		t.Errorf("one sample, yet %+v", g)
	}
}

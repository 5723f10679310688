package live

import (
	"runtime"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/reports"
)

const (
	// monitorTick is the period of the timer whose lateness is the
	// scheduling lag: 200 samples a second, enough for a p99 per second,
	// at about 1–2% of a core on an idle 2-core VM (a 2 ms tick cost
	// 2.5–3%).
	monitorTick = 5 * time.Millisecond
	// sampleEvery is the interval of the resource samples (RSS, open
	// files, goroutines).
	sampleEvery = 10 * time.Second
	// minSecond is the shortest last second of an attack that the
	// monitor measures on its own.
	minSecond = 100 * time.Millisecond
)

// monitor measures the harness's own health while an attack runs (see
// reports.Harness). Its goroutine wakes every tick and records how late it
// woke; at each second of the attack it takes the process's CPU time
// (getrusage), the whole machine's busy time (/proc/stat), the requests in
// flight and those that queued at the connection bound; every sampleEvery
// it samples RSS, open files and goroutines. The result loop adds each
// request's send lag (sendLag).
type monitor struct {
	// Immutable after startMonitor.
	start       time.Time
	tick        time.Duration
	sampleEvery time.Duration
	cores       float64
	inProcess   bool
	capHits     func() int64 // nil: no connection bound is counted
	inFlight    func() int64

	stopc chan struct{}
	done  chan struct{}

	// Owned by the monitor's goroutine until done is closed.
	seconds []reports.HarnessSecond
	samples []reports.ResourceSample
	lag     *hdrhistogram.Histogram // scheduling lag, µs

	// Owned by the result loop (sendLag), read after it ends.
	sends []sendSecond
}

// sendSecond is the send lag of the requests sent in one second.
type sendSecond struct {
	n        int64
	sum, max time.Duration
}

// monitorConfig is what startMonitor needs of the attack.
type monitorConfig struct {
	start       time.Time     // the attack's start; seconds count from it
	tick        time.Duration // 0: monitorTick
	sampleEvery time.Duration // 0: every 10 s
	inProcess   bool          // the backends run in this process
	capHits     func() int64  // nil when the client has no connection bound
	inFlight    func() int64
}

// startMonitor starts measuring the harness; stop ends it.
func startMonitor(c monitorConfig) *monitor {
	if c.tick <= 0 {
		c.tick = monitorTick
	}
	if c.sampleEvery <= 0 {
		c.sampleEvery = sampleEvery
	}
	m := &monitor{
		start: c.start, tick: c.tick, sampleEvery: c.sampleEvery,
		cores:     float64(min(runtime.NumCPU(), runtime.GOMAXPROCS(0))),
		inProcess: c.inProcess, capHits: c.capHits, inFlight: c.inFlight,
		stopc: make(chan struct{}), done: make(chan struct{}),
		lag: hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 2),
	}
	go m.run()
	return m
}

// sendLag records that a request sent at sent (since the start) left lag
// behind its schedule. Only the result loop calls it.
func (m *monitor) sendLag(sent, lag time.Duration) {
	if m == nil || sent < 0 {
		return
	}
	k := int(sent / time.Second)
	for len(m.sends) <= k {
		m.sends = append(m.sends, sendSecond{})
	}
	s := &m.sends[k]
	lag = max(lag, 0)
	s.n++
	s.sum += lag
	s.max = max(s.max, lag)
}

// secondState is the counters at the start of the second being measured.
type secondState struct {
	at        time.Time
	cpu       time.Duration
	cpuOK     bool
	busy, all uint64 // machine jiffies
	machineOK bool
	capHits   int64
}

func (m *monitor) state(now time.Time) secondState {
	s := secondState{at: now}
	s.cpu, s.cpuOK = processCPU()
	s.busy, s.all, s.machineOK = machineJiffies()
	if m.capHits != nil {
		s.capHits = m.capHits()
	}
	return s
}

func (m *monitor) run() {
	defer close(m.done)
	timer := time.NewTimer(m.tick)
	defer timer.Stop()
	prev := m.state(time.Now())
	m.sample(prev.at)
	nextSample := m.start.Add(m.sampleEvery)
	secEnd := m.start.Add(time.Second)
	lags := make([]time.Duration, 0, int(time.Second/m.tick)+1)
	armed := time.Now()
	for {
		select {
		case <-m.stopc:
			// The last, partial second, unless it is too short to
			// measure a CPU share in.
			if now := time.Now(); now.Sub(prev.at) >= minSecond {
				m.closeSeconds(now, &prev, lags, 1)
			}
			m.sample(time.Now())
			return
		case <-timer.C:
		}
		now := time.Now()
		late := max(now.Sub(armed)-m.tick, 0)
		timer.Reset(m.tick)
		armed = time.Now()
		lags = append(lags, late)
		_ = m.lag.RecordValue(int64(late / time.Microsecond))
		if !now.Before(secEnd) {
			// A harness stalled past the end of more than one second
			// closes them at once, each with the same averages.
			n := 0
			for !now.Before(secEnd) {
				n++
				secEnd = secEnd.Add(time.Second)
			}
			m.closeSeconds(now, &prev, lags, n)
			lags = lags[:0]
		}
		if !now.Before(nextSample) {
			m.sample(now)
			for !now.Before(nextSample) {
				nextSample = nextSample.Add(m.sampleEvery)
			}
		}
	}
}

// closeSeconds appends n seconds measured from prev to now, with the
// scheduling lags lags, and makes now the start of the next.
func (m *monitor) closeSeconds(now time.Time, prev *secondState, lags []time.Duration, n int) {
	cur := m.state(now)
	wall := cur.at.Sub(prev.at)
	var sec reports.HarnessSecond
	if cur.cpuOK && prev.cpuOK && wall > 0 {
		sec.CPUCores = float64(cur.cpu-prev.cpu) / float64(wall)
	}
	if cur.machineOK && prev.machineOK && cur.all > prev.all {
		c := float64(cur.busy-prev.busy) / float64(cur.all-prev.all) * float64(runtime.NumCPU())
		sec.MachineCores = &c
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		sec.SchedLagP99Ms = msOf(lags[(len(lags)*99+99)/100-1])
		sec.SchedLagMaxMs = msOf(lags[len(lags)-1])
	}
	if m.inFlight != nil {
		sec.InFlight = m.inFlight()
	}
	sec.CapHits = cur.capHits - prev.capHits
	for range n {
		sec.TS = len(m.seconds)
		m.seconds = append(m.seconds, sec)
	}
	*prev = cur
}

// sample appends the process's resources at now.
func (m *monitor) sample(now time.Time) {
	s := reports.ResourceSample{
		TS:         now.Sub(m.start).Seconds(),
		Goroutines: int64(runtime.NumGoroutine()),
	}
	if rss, ok := residentBytes(); ok {
		s.RSSBytes = &rss
	}
	if fds, ok := openFiles(); ok {
		s.OpenFDs = &fds
	}
	m.samples = append(m.samples, s)
}

// stop ends the monitor and returns what it measured, with the verdict
// over the attack's first elapsed.
func (m *monitor) stop(elapsed time.Duration) *reports.Harness {
	if m == nil {
		return nil
	}
	close(m.stopc)
	<-m.done
	secs := m.seconds
	if len(secs) == 0 {
		secs = []reports.HarnessSecond{{}}
	}
	// Requests sent in a last second too short to measure count in the
	// second before it.
	for len(m.sends) > len(secs) {
		last, extra := &m.sends[len(m.sends)-2], m.sends[len(m.sends)-1]
		last.n += extra.n
		last.sum += extra.sum
		last.max = max(last.max, extra.max)
		m.sends = m.sends[:len(m.sends)-1]
	}
	for k, s := range m.sends {
		secs[k].Sent = s.n
		if s.n > 0 {
			secs[k].SendLagMeanMs = msOf(s.sum / time.Duration(s.n))
			secs[k].SendLagMaxMs = msOf(s.max)
		}
	}
	h := &reports.Harness{
		Cores:             m.cores,
		MachineCPUs:       runtime.NumCPU(),
		BackendsInProcess: m.inProcess,
		TickMs:            msOf(m.tick),
		Seconds:           secs,
		Samples:           m.samples,
	}
	if m.lag.TotalCount() > 0 {
		h.SchedLagMs = reports.LagStats{
			P50: float64(m.lag.ValueAtPercentile(50)) / 1000,
			P99: float64(m.lag.ValueAtPercentile(99)) / 1000,
			Max: float64(m.lag.Max()) / 1000,
		}
	}
	attack := attackSeconds(elapsed)
	var cpu []float64
	for _, s := range secs[:min(attack, len(secs))] {
		cpu = append(cpu, s.CPUCores)
		h.CPUCoresMax = max(h.CPUCoresMax, s.CPUCores)
	}
	if len(cpu) > 0 {
		h.CPUCoresP50 = medianOf(cpu)
	}
	judge(h, attack)
	return h
}

// attackSeconds is how many seconds of the series an attack of elapsed
// covers: every second it started.
func attackSeconds(elapsed time.Duration) int {
	return int((elapsed + time.Second - 1) / time.Second)
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
